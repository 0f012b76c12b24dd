package gap_test

import (
	"context"
	"fmt"

	"github.com/refine-go/refine/gap"
)

func ExampleDefault() {
	a := gap.Assessment{
		FilesAnalyzed:  2,
		EstimatedFiles: 7,
		Missing:        []string{"JwtService.cs", "AuthMiddleware.cs"},
		Findings: []gap.Finding{
			{ID: "finding-001", Description: "Uses JWT for authentication", Confidence: 0.9,
				Impact: gap.Critical, Citations: []string{"AuthController.cs:42"}, Sources: []string{"Explore", "Security"}},
			{ID: "finding-003", Description: "Responses are cached", Confidence: 0.55,
				Impact: gap.Important},
		},
		Questions: []gap.Question{
			{Text: "How does the app handle password resets?", Critical: true, Answered: true},
			{Text: "Is it possible to add OAuth providers?", Critical: true},
		},
		Signals: gap.Signals{
			Tests: &gap.TestResult{Failures: []gap.TestCaseFailure{
				{Name: "login.test.ts", Expected: "token to contain userId", Received: "undefined"},
			}},
		},
	}
	gaps, err := gap.Default().Analyze(context.Background(), a, gap.Thresholds{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range gaps {
		fmt.Println(g)
	}
	// Output:
	// P1 unanswered_question [Is it possible to add OAuth providers?]: unanswered
	// P1 test_failure [login.test.ts]: Expected: token to contain userId, Received: undefined
	// P1 coverage [coverage]: coverage 0.29 below 0.70 (2 of 7 files)
	// P2 missing_evidence [finding-003]: confidence 0.55 below 0.80 (missing evidence): Responses are cached
}

func ExampleSelect() {
	gaps := gap.Prioritize([]gap.Gap{
		{Kind: gap.MissingContext, Target: "token validation flow"},
		{Kind: gap.UnansweredQuestion, Target: "Is OAuth possible?", Relevance: 0.9},
		{Kind: gap.Pattern, Target: "error handling"},
		{Kind: gap.ConflictingFindings, Target: "database", Relevance: 0.5},
	}, gap.Assessment{})

	// One iteration left: only P1 gaps.
	selected, deferred := gap.Select(gaps, 1, 3)
	fmt.Println("last iteration:", len(selected), "selected,", len(deferred), "deferred")

	// More iterations and at most 3 agents: P1 and P2, ranked by relevance.
	selected, deferred = gap.Select(gaps, 3, 3)
	for _, g := range selected {
		fmt.Println("address:", g)
	}
	for _, g := range deferred {
		fmt.Println("defer:  ", g)
	}
	// Output:
	// last iteration: 1 selected, 3 deferred
	// address: P1 unanswered_question [Is OAuth possible?]
	// address: P2 conflicting_findings [database]
	// address: P2 missing_context [token validation flow]
	// defer:   P3 unclear_pattern [error handling]
}

func ExampleQuality() {
	th := gap.Thresholds{MinSignalConfidence: 0.75}
	gaps, _ := gap.Quality{}.Analyze(context.Background(), gap.Assessment{Signals: gap.Signals{
		Validation: []gap.ValidationError{{Path: "$.analysis.security", Message: "Required field 'security' is missing"}},
		Confidence: gap.Float(0.62),
	}}, th)
	for _, g := range gaps {
		fmt.Printf("%s %.2f fixable=%t %s\n", g.Kind, g.Severity, g.Fixable, g.Detail)
	}
	// Output:
	// validation_failure 0.70 fixable=true $.analysis.security: Required field 'security' is missing
	// low_confidence 0.38 fixable=true Confidence 62% below threshold 75%
}
