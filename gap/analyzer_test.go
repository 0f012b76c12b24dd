package gap

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fixed(gaps ...Gap) Analyzer {
	return AnalyzerFunc(func(context.Context, Assessment, Thresholds) ([]Gap, error) {
		return append([]Gap(nil), gaps...), nil
	})
}

func TestCombine(t *testing.T) {
	errBoom := errors.New("boom")
	calls := 0
	counting := AnalyzerFunc(func(context.Context, Assessment, Thresholds) ([]Gap, error) {
		calls++
		return nil, nil
	})
	failing := AnalyzerFunc(func(context.Context, Assessment, Thresholds) ([]Gap, error) {
		return []Gap{{Target: "partial"}}, errBoom
	})
	tests := []struct {
		name      string
		an        Analyzer
		a         Assessment
		want      []string
		wantErr   error
		wantCalls int
	}{
		{"empty", Combine(), Assessment{}, nil, nil, 0},
		{"nil_analyzers_skipped", Combine(nil, fixed(Gap{Target: "x"}), nil), Assessment{}, []string{"x"}, nil, 0},
		{
			"concatenates_in_order",
			Combine(fixed(Gap{Target: "a"}, Gap{Target: "b"}), Research{}, fixed(Gap{Target: "c"})),
			Assessment{Context: []string{"flow"}},
			[]string{"a", "b", "flow", "c"}, nil, 0,
		},
		{"error_stops", Combine(fixed(Gap{Target: "a"}), failing, counting), Assessment{}, nil, errBoom, 0},
		{
			"builtin_error_stops", Combine(counting, Quality{}, counting),
			Assessment{Signals: Signals{Quality: Float(2)}}, nil, ErrInvalidAssessment, 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			got, err := tt.an.Analyze(context.Background(), tt.a, Thresholds{})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, targets(got)); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
			if calls != tt.wantCalls {
				t.Errorf("analyzers after the error ran %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestCombineDoesNotWriteIntoAnalyzerSlice(t *testing.T) {
	backing := make([]Gap, 1, 8)
	backing[0] = Gap{Target: "own"}
	first := AnalyzerFunc(func(context.Context, Assessment, Thresholds) ([]Gap, error) { return backing[:1], nil })
	got, err := Combine(first, fixed(Gap{Target: "second"})).Analyze(context.Background(), Assessment{}, Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"own", "second"}, targets(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if backing[:2][1].Target != "" {
		t.Error("Combine appended into the first analyzer's spare capacity")
	}
}

func TestCombineContext(t *testing.T) {
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	called := false
	an := Combine(AnalyzerFunc(func(context.Context, Assessment, Thresholds) ([]Gap, error) {
		called = true
		return nil, nil
	}))
	gaps, err := an.Analyze(ctx, Assessment{}, Thresholds{})
	if gaps != nil || !errors.Is(err, cause) {
		t.Errorf("Analyze = %v, %v; want nil, %v", gaps, err, cause)
	}
	if called {
		t.Error("analyzer ran after cancellation")
	}
	if _, err := Default().Analyze(ctx, Assessment{}, Thresholds{}); !errors.Is(err, cause) {
		t.Errorf("Default().Analyze err = %v, want %v", err, cause)
	}
}

func TestDefault(t *testing.T) {
	a := Assessment{
		FilesAnalyzed: 10, EstimatedFiles: 25, // coverage 0.40 → P1
		Findings: []Finding{
			{ID: "f1", Description: "JWT in cookies", Confidence: 0.5, Impact: Critical, Citations: []string{"a:1"}, Sources: []string{"A", "B"}},
			{ID: "f2", Description: "Repository pattern", Confidence: 0.9, Pattern: true},
		},
		Conflicts: []Conflict{{ID: "c1", Similarity: 0.4, A: Claim{Source: "A", Statement: "x"}, B: Claim{Source: "B", Statement: "y"}}},
		Questions: []Question{{Text: "Is OAuth possible?", Critical: true, Relevance: 1}},
		Signals: Signals{
			Validation: []ValidationError{{Path: "$.a", Message: "missing", Code: CodeSchemaViolation}},
			Tests:      &TestResult{Failures: []TestCaseFailure{{Name: "TestLogin", Message: "nil token"}}},
		},
	}
	got, err := Default().Analyze(context.Background(), a, Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, g := range got {
		lines = append(lines, g.String())
	}
	want := []string{
		"P1 unanswered_question [Is OAuth possible?]: unanswered",
		"P1 test_failure [TestLogin]: nil token",                            // severity 0.9
		"P1 coverage [coverage]: coverage 0.40 below 0.70 (10 of 25 files)", // severity 0.43
		"P2 validation_failure [$.a]: $.a: missing",                         // severity 0.7
		"P2 conflicting_findings [c1]: A says \"x\" vs B says \"y\"",        // severity 0.6
		"P2 confidence [f1]: confidence 0.50 below 0.80 (needs verification): JWT in cookies",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("gaps (-want +got):\n%s", diff)
	}
}

func TestDefaultEmptyAssessmentNoGaps(t *testing.T) {
	got, err := Default().Analyze(context.Background(), Assessment{}, Thresholds{})
	if err != nil || got != nil {
		t.Errorf("Analyze(empty) = %v, %v; want nil, nil", got, err)
	}
}

func TestAnalyzeEmptyNoAllocs(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		an   Analyzer
	}{
		{"Research", Research{}},
		{"Quality", Quality{}},
		{"Combine", Combine(Research{}, Quality{})},
		{"Default", Default()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := tt.an.Analyze(ctx, Assessment{}, Thresholds{}); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("Analyze(empty) allocs = %v, want 0", allocs)
			}
		})
	}
}
