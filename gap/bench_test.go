package gap

import (
	"context"
	"testing"
)

func typicalAssessment() Assessment {
	return Assessment{
		FilesAnalyzed: 15, EstimatedFiles: 25,
		Missing: []string{"JwtService.cs", "AuthMiddleware.cs"},
		Findings: []Finding{
			{ID: "f1", Description: "Uses JWT", Confidence: 0.9, Impact: Critical, Citations: []string{"a:1"}, Sources: []string{"A", "B"}},
			{ID: "f2", Description: "Caches responses", Confidence: 0.6, Impact: Important},
			{ID: "f3", Description: "Repository pattern", Confidence: 0.7, Pattern: true, Citations: []string{"r:1"}},
			{ID: "f4", Description: "Password hashing", Confidence: 0.95, Area: "security", Citations: []string{"h:1"}, Sources: []string{"S", "E"}},
		},
		Conflicts: []Conflict{{ID: "c1", A: Claim{Source: "A", Statement: "SQL Server"}, B: Claim{Source: "B", Statement: "PostgreSQL"}}},
		Context:   []string{"token validation flow"},
		Questions: []Question{
			{Text: "How are passwords reset?", Critical: true, Answered: true},
			{Text: "Is OAuth possible?", Critical: true, Relevance: 0.9},
		},
		Signals: Signals{
			Confidence:   Float(0.7),
			Completeness: Float(0.95),
			Tests:        &TestResult{Failures: []TestCaseFailure{{Name: "TestLogin", Expected: "token", Received: "nil"}}},
		},
	}
}

func BenchmarkDefaultAnalyze(b *testing.B) {
	for _, bc := range []struct {
		name string
		a    Assessment
	}{
		{"empty", Assessment{}},
		{"coverage", Assessment{FilesAnalyzed: 41, EstimatedFiles: 100}},
		{"typical", typicalAssessment()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			an := Default()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := an.Analyze(ctx, bc.a, Thresholds{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSelect(b *testing.B) {
	gaps, err := Default().Analyze(context.Background(), typicalAssessment(), Thresholds{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		Select(gaps, 2, 3)
	}
}
