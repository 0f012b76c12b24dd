package iterate_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// situation builds a Situation whose history observed the given gap lists
// (oldest first), each attempt taking the listed action.
func situation(max int, actions []iterate.Action, rounds ...[]gap.Gap) *iterate.Situation {
	h := &converge.History{MaxIterations: max}
	for i, gaps := range rounds {
		if i > 0 {
			h.Complete(converge.Attempt{Failed: false, Action: string(actions[i-1]), Duration: 0})
		}
		h.Observe(gap.Assessment{}, gaps)
	}
	h.Gaps = rounds[len(rounds)-1]
	return &iterate.Situation{Iteration: h.Iteration + 1, History: h}
}

func g(kind gap.Kind, target string, sev float64) gap.Gap {
	return gap.Gap{Kind: kind, Target: target, Detail: target + " detail", Severity: sev, Fixable: true, Priority: gap.P1}
}

// TestAdaptiveSeed001StrategySelection names the rules of seed 001's
// selectIterationStrategy.
func TestAdaptiveSeed001StrategySelection(t *testing.T) {
	val := g(gap.ValidationFailure, "$.security", 1)
	low := g(gap.LowConfidence, "confidence", 0.4)
	hal := g(gap.Hallucination, "claim", 1)
	req := g(gap.RequirementUnmet, "perf analysis", 0.9)
	tests := []struct {
		name       string
		strategy   iterate.Adaptive
		sit        *iterate.Situation
		want       iterate.Action
		wantGuides string
	}{
		{"seed001/same_triggers_after_retry_refine", iterate.Adaptive{},
			situation(5, []iterate.Action{iterate.Retry}, []gap.Gap{val}, []gap.Gap{val}), iterate.Refine, "Focus on specific issues"},
		{"seed001/validation_failure_retry_with_fixes", iterate.Adaptive{},
			situation(5, nil, []gap.Gap{val, low}), iterate.Retry, "Fix the validation errors"},
		{"seed001/low_confidence_expand", iterate.Adaptive{},
			situation(5, nil, []gap.Gap{low, hal}), iterate.Expand, "Provide more evidence"},
		{"seed001/hallucination_retry_with_verification", iterate.Adaptive{},
			situation(5, nil, []gap.Gap{hal}), iterate.Retry, "Verify all factual claims"},
		{"seed001/escalate_near_iteration_limit", iterate.Adaptive{EscalateNearLimit: true},
			situation(2, []iterate.Action{iterate.Retry}, []gap.Gap{hal}, []gap.Gap{req}), iterate.Escalate, ""},
		{"seed001/near_limit_without_option_uses_last_iteration", iterate.Adaptive{},
			situation(2, []iterate.Action{iterate.Retry}, []gap.Gap{hal}, []gap.Gap{req}), iterate.Retry, ""},
		{"seed001/default_simple_retry", iterate.Adaptive{},
			situation(5, nil, []gap.Gap{req}), iterate.Retry, "Address the identified issues"},
		{"never_repeat_failed_strategy", iterate.Adaptive{},
			situation(9, []iterate.Action{iterate.Retry, iterate.Refine}, []gap.Gap{val}, []gap.Gap{val}, []gap.Gap{val}), iterate.Simplify, "Reduce the scope"},
		{"different_triggers_start_over", iterate.Adaptive{},
			situation(9, []iterate.Action{iterate.Retry}, []gap.Gap{val}, []gap.Gap{req}), iterate.Retry, ""},
		{"seed000/no_gaps_broad_refinement", iterate.Adaptive{},
			situation(4, nil, nil), iterate.Refine, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.strategy.Plan(context.Background(), tt.sit)
			if err != nil {
				t.Fatal(err)
			}
			if p.Action != tt.want {
				t.Fatalf("action %s (%s), want %s", p.Action, p.Reason, tt.want)
			}
			if tt.wantGuides != "" && !strings.Contains(strings.Join(p.Guidance, "|"), tt.wantGuides) {
				t.Errorf("guidance %q lacks %q", p.Guidance, tt.wantGuides)
			}
			if p.Action == iterate.Escalate && (p.Escalation == nil || p.Escalation.Question == "") {
				t.Errorf("escalation without a question")
			}
		})
	}
}

// TestAdaptiveRoles: each gap kind goes to its worker role, seed 000's
// agents named after their job; quality triggers share one implementer
// task; a host's role table fills in prompt templates.
func TestAdaptiveRoles(t *testing.T) {
	cov := gap.Gap{Kind: gap.Coverage, Target: "coverage", Focus: []string{"jwt.go", "middleware.go"}, Priority: gap.P1}
	evid := gap.Gap{Kind: gap.Evidence, Target: "finding-003", Priority: gap.P2}
	pat := gap.Gap{Kind: gap.Pattern, Target: "error handling", Priority: gap.P2}
	conf := gap.Gap{Kind: gap.ConflictingFindings, Target: "c1", Detail: "SQL Server vs PostgreSQL", Priority: gap.P2}
	sec := gap.Gap{Kind: gap.Security, Target: "token storage", Priority: gap.P1}
	perf := gap.Gap{Kind: gap.Performance, Target: "cache", Priority: gap.P2}
	t1 := gap.Gap{Kind: gap.TestFailure, Target: "TestA", Detail: "expected 1, received 2", Priority: gap.P1, Severity: 0.9}
	t2 := gap.Gap{Kind: gap.ReviewRejected, Target: "review", Detail: "missing doc comment", Priority: gap.P1, Severity: 0.7}
	host := iterate.Roles{
		gap.Coverage:            {Name: iterate.RoleExplore, Prompt: "Analyze ONLY these files: {focus}."},
		gap.ConflictingFindings: {Name: iterate.RoleVerify, Prompt: "Resolve conflict: {detail}."},
		gap.TestFailure:         {Name: iterate.RoleImplement, Group: true, Prompt: "Address the identified issues: {detail}"},
		gap.ReviewRejected:      {Name: iterate.RoleImplement, Group: true, Prompt: "Address the identified issues: {detail}"},
	}
	tests := []struct {
		gaps      []gap.Gap
		wantRoles []iterate.RoleName
		prompt    string
	}{
		{[]gap.Gap{cov}, []iterate.RoleName{iterate.RoleExplore}, "Analyze ONLY these files: jwt.go, middleware.go."},
		{[]gap.Gap{evid}, []iterate.RoleName{iterate.RoleCitation}, ""},
		{[]gap.Gap{pat}, []iterate.RoleName{iterate.RolePattern}, ""},
		{[]gap.Gap{conf}, []iterate.RoleName{iterate.RoleVerify}, "Resolve conflict: SQL Server vs PostgreSQL."},
		{[]gap.Gap{sec}, []iterate.RoleName{iterate.RoleSecurity}, ""},
		{[]gap.Gap{perf}, []iterate.RoleName{iterate.RolePerformance}, ""},
		{[]gap.Gap{t1, t2}, []iterate.RoleName{iterate.RoleImplement}, "expected 1, received 2; missing doc comment"},
	}
	for _, tt := range tests {
		t.Run(string(tt.gaps[0].Kind), func(t *testing.T) {
			for _, s := range []*iterate.Adaptive{{}, {Roles: host}} {
				p, err := s.Plan(context.Background(), situation(4, nil, tt.gaps))
				if err != nil {
					t.Fatal(err)
				}
				var roles []iterate.RoleName
				for _, tk := range p.Tasks {
					roles = append(roles, tk.Role)
				}
				if diff := cmp.Diff(tt.wantRoles, roles); diff != "" {
					t.Errorf("roles (-want +got):\n%s", diff)
				}
				if s.Roles != nil && !strings.Contains(p.Tasks[0].Prompt, tt.prompt) {
					t.Errorf("prompt %q lacks %q", p.Tasks[0].Prompt, tt.prompt)
				}
				if s.Roles == nil && p.Tasks[0].Prompt != "" {
					t.Errorf("default roles gave the prompt %q; prompts are the host's", p.Tasks[0].Prompt)
				}
			}
		})
	}
}

// TestAdaptiveSeed000Selection: P1+P2 with two or more iterations left, P1
// only on the last; at most MaxTasks tasks.
func TestAdaptiveSeed000Selection(t *testing.T) {
	p1 := gap.Gap{Kind: gap.UnansweredQuestion, Target: "q1", Priority: gap.P1}
	p2 := gap.Gap{Kind: gap.ConflictingFindings, Target: "c1", Priority: gap.P2}
	p1b := gap.Gap{Kind: gap.UnansweredQuestion, Target: "q2", Priority: gap.P1}
	tests := []struct {
		name         string
		max          int
		done         int
		maxTasks     int
		gaps         []gap.Gap
		wantTargets  []string
		wantDeferred []string
	}{
		{"two_or_more_remaining_P1_and_P2", 4, 0, 0, []gap.Gap{p1, p2}, []string{"q1", "c1"}, nil},
		{"one_remaining_P1_only", 4, 3, 0, []gap.Gap{p1, p2}, []string{"q1"}, []string{"c1"}},
		{"max_tasks_defer_rest", 4, 0, 2, []gap.Gap{p1, p1b, p2}, []string{"q1", "q2"}, []string{"c1"}},
	}
	for _, tt := range tests {
		t.Run("seed000/"+tt.name, func(t *testing.T) {
			sit := situation(tt.max, nil, tt.gaps)
			sit.History.Iteration = tt.done
			p, err := (&iterate.Adaptive{MaxTasks: tt.maxTasks}).Plan(context.Background(), sit)
			if err != nil {
				t.Fatal(err)
			}
			var got, deferred []string
			for _, tk := range p.Tasks {
				got = append(got, tk.Gap().Target)
			}
			for _, d := range p.Deferred {
				deferred = append(deferred, d.Target)
			}
			if diff := cmp.Diff(tt.wantTargets, got); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeferred, deferred); diff != "" {
				t.Errorf("deferred (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdaptiveValidate(t *testing.T) {
	for _, s := range []iterate.Adaptive{{MaxTasks: -1}, {FeedbackLimit: -1}, {EscalateAfter: -2}} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	_, err := iterate.New(&iterate.FuncWorker[int]{Do: nil}, iterate.WithStrategy(&iterate.Adaptive{MaxTasks: -1})).Run(context.Background(), 0)
	if err == nil || !strings.Contains(err.Error(), "MaxTasks") {
		t.Errorf("Run with an invalid strategy: %v", err)
	}
}

// TestAdaptiveDefaultRoleTable: every kind with a default role gets it (two
// gaps of a grouped role share one task, of another role take two), a kind
// without one takes the host's role of "" or "explore", and a host's role
// of a kind overrides the default.
func TestAdaptiveDefaultRoleTable(t *testing.T) {
	want := map[gap.Kind]iterate.Role{
		gap.Coverage: {Name: iterate.RoleExplore}, gap.MissingContext: {Name: iterate.RoleExplore}, gap.UnansweredQuestion: {Name: iterate.RoleExplore},
		gap.Confidence: {Name: iterate.RoleCitation, Group: true}, gap.Evidence: {Name: iterate.RoleCitation, Group: true},
		gap.Pattern:             {Name: iterate.RolePattern, Group: true},
		gap.ConflictingFindings: {Name: iterate.RoleVerify},
		gap.Security:            {Name: iterate.RoleSecurity},
		gap.Performance:         {Name: iterate.RolePerformance},
		"host_kind":             {Name: iterate.RoleExplore},
		"":                      {Name: iterate.RoleExplore},
	}
	for _, k := range []gap.Kind{gap.ValidationFailure, gap.LowConfidence, gap.IncompleteOutput, gap.ExplicitFeedback,
		gap.Hallucination, gap.RequirementUnmet, gap.QualityThreshold, gap.UserRejection, gap.TestFailure, gap.ReviewRejected} {
		want[k] = iterate.Role{Name: iterate.RoleImplement, Group: true}
	}
	roles := func(s *iterate.Adaptive, k gap.Kind) []iterate.RoleName {
		t.Helper()
		gaps := []gap.Gap{{Kind: k, Target: "a", Priority: gap.P1}, {Kind: k, Target: "b", Priority: gap.P1}}
		p, err := s.Plan(context.Background(), situation(9, nil, gaps))
		if err != nil {
			t.Fatal(err)
		}
		var got []iterate.RoleName
		for _, tk := range p.Tasks {
			got = append(got, tk.Role)
		}
		return got
	}
	for k, r := range want {
		wantRoles := []iterate.RoleName{r.Name, r.Name}
		if r.Group {
			wantRoles = wantRoles[:1]
		}
		if diff := cmp.Diff(wantRoles, roles(&iterate.Adaptive{}, k)); diff != "" {
			t.Errorf("kind %q: roles (-want +got):\n%s", k, diff)
		}
		host := &iterate.Adaptive{Roles: iterate.Roles{"": {Name: "fallback"}}}
		fallback := wantRoles
		if k == "host_kind" || k == "" {
			fallback = []iterate.RoleName{"fallback", "fallback"}
		}
		if diff := cmp.Diff(fallback, roles(host, k)); diff != "" {
			t.Errorf("kind %q with a role for \"\": roles (-want +got):\n%s", k, diff)
		}
		own := &iterate.Adaptive{Roles: iterate.Roles{k: {Name: "own", Group: true}}}
		if diff := cmp.Diff([]iterate.RoleName{"own"}, roles(own, k)); diff != "" {
			t.Errorf("kind %q with a role of its own: roles (-want +got):\n%s", k, diff)
		}
	}
}

// BenchmarkAdaptivePlan measures the default strategy's plan of the two
// paths of BenchmarkLoop: no gaps (func) and one coverage gap (gap).
func BenchmarkAdaptivePlan(b *testing.B) {
	cov := gap.Gap{Kind: gap.Coverage, Priority: gap.P1, Severity: 0.41, Fixable: true, Target: "coverage",
		Detail: "coverage 0.41 below 0.70 (41 of 100 files)", Source: "research"}
	for _, bc := range []struct {
		name string
		gaps []gap.Gap
	}{{"none", nil}, {"coverage", []gap.Gap{cov}}} {
		b.Run(bc.name, func(b *testing.B) {
			prev := cov
			prev.Detail = "coverage 0.40 below 0.70 (40 of 100 files)" // moved: not the same triggers
			sit := situation(1000, []iterate.Action{iterate.Expand}, []gap.Gap{prev}, bc.gaps)
			s := &iterate.Adaptive{}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Plan(ctx, sit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAdaptiveFeedbackSummaryKinds: the summary line of a plan's feedback
// names the top gap's kind in words, as the kind with spaces for
// underscores, except for failed tests, rejected reviews and validation.
func TestAdaptiveFeedbackSummaryKinds(t *testing.T) {
	special := map[gap.Kind]string{gap.TestFailure: "Test failed", gap.ReviewRejected: "Review rejected", gap.ValidationFailure: "Validation failed"}
	kinds := []gap.Kind{gap.Coverage, gap.Confidence, gap.ConflictingFindings, gap.MissingContext, gap.UnansweredQuestion,
		gap.Evidence, gap.Pattern, gap.Security, gap.Performance, gap.ValidationFailure, gap.LowConfidence, gap.IncompleteOutput,
		gap.ExplicitFeedback, gap.Hallucination, gap.RequirementUnmet, gap.QualityThreshold, gap.UserRejection, gap.TestFailure,
		gap.ReviewRejected, "host_kind_of_mine", "plain", ""}
	for _, k := range kinds {
		want, ok := special[k]
		if !ok {
			want = strings.ReplaceAll(string(k), "_", " ")
		}
		gaps := []gap.Gap{{Kind: k, Target: "t", Detail: "what went wrong", Severity: 0.5, Priority: gap.P1}}
		p, err := (&iterate.Adaptive{}).Plan(context.Background(), situation(9, nil, gaps))
		if err != nil {
			t.Fatal(err)
		}
		if line, _, _ := strings.Cut(p.Feedback, "\n"); line != want+": what went wrong" {
			t.Errorf("kind %q: summary %q, want %q", k, line, want+": what went wrong")
		}
	}
}

// TestAdaptiveActionSweep holds the action Adaptive chooses for fresh gaps
// (no persistence) to seed 001's rules, written out here as a scan of the
// gaps per rule, over every single kind and many generated mixtures, with
// and without EscalateNearLimit on the last iterations.
func TestAdaptiveActionSweep(t *testing.T) {
	kinds := []gap.Kind{gap.Coverage, gap.Confidence, gap.ConflictingFindings, gap.MissingContext, gap.UnansweredQuestion,
		gap.Evidence, gap.Pattern, gap.Security, gap.Performance, gap.ValidationFailure, gap.LowConfidence, gap.IncompleteOutput,
		gap.ExplicitFeedback, gap.Hallucination, gap.RequirementUnmet, gap.QualityThreshold, gap.UserRejection, gap.TestFailure,
		gap.ReviewRejected, "host_kind"}
	want := func(gaps []gap.Gap, nearLimit bool) string {
		has := func(ks ...gap.Kind) bool {
			for _, g := range gaps {
				if slices.Contains(ks, g.Kind) {
					return true
				}
			}
			return false
		}
		switch {
		case has(gap.ValidationFailure):
			return "validation failures: retry with fixes"
		case has(gap.LowConfidence, gap.Confidence, gap.Evidence, gap.Pattern):
			return "low confidence: expand with more evidence"
		case has(gap.Hallucination):
			return "hallucinations detected: retry with verification"
		case nearLimit:
			return "one iteration left with problems remaining"
		case has(gap.ConflictingFindings):
			return "conflicting findings: verify"
		case has(gap.Coverage, gap.MissingContext, gap.UnansweredQuestion, gap.Security, gap.Performance):
			return "coverage or context missing: expand the search"
		}
		return "address the identified issues"
	}
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 3000 {
		var gaps []gap.Gap
		if i < len(kinds) {
			gaps = []gap.Gap{{Kind: kinds[i], Target: "t", Priority: gap.P1}}
		} else {
			for j := range 1 + r.IntN(4) {
				gaps = append(gaps, gap.Gap{Kind: kinds[r.IntN(len(kinds))], Target: strconv.Itoa(j), Priority: gap.P1})
			}
		}
		escalate := r.IntN(2) == 0
		sit := situation(4, nil, gaps)
		sit.History.Iteration = r.IntN(5)
		left := sit.History.Remaining()
		p, err := (&iterate.Adaptive{EscalateNearLimit: escalate}).Plan(context.Background(), sit)
		if err != nil {
			t.Fatal(err)
		}
		if w := want(gaps, escalate && left >= 0 && left <= 1); p.Reason != w {
			t.Fatalf("gaps %v (escalate near limit %v, %d left): reason %q, want %q", gaps, escalate, left, p.Reason, w)
		}
	}
}
