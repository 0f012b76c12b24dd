package gap

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func pick[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

// randomAssessment returns an assessment with some of every input of the
// analyzers set, now and then out of range.
func randomAssessment(r *rand.Rand) Assessment {
	ratio := func() float64 {
		return pick(r, 0, 0, 1e-10, 0.3, 0.41, 0.6, 0.69, 0.7, 0.8, 0.95, 1, -0.1, 2, math.NaN())
	}
	opt := func() *float64 {
		if r.IntN(3) == 0 {
			return Float(ratio())
		}
		return nil
	}
	var a Assessment
	if r.IntN(3) == 0 {
		a.Coverage = ratio()
	}
	if r.IntN(2) == 0 {
		a.EstimatedFiles = pick(r, 0, 25, 100, -1)
		a.FilesAnalyzed = pick(r, 0, 15, 41, 120, -2)
	}
	if r.IntN(4) == 0 {
		a.Missing = []string{"a.go", "b.go"}
	}
	if r.IntN(3) == 0 {
		a.Confidence = ratio()
	}
	for i := range pick(r, 0, 0, 1, 3) {
		a.Findings = append(a.Findings, Finding{ID: pick(r, "f1", "f2", ""), Description: "d", Confidence: ratio(),
			Impact: pick(r, Informational, Important, Critical), Pattern: r.IntN(4) == 0, Area: pick(r, "", "Security", "performance"),
			Citations: pick(r, nil, []string{"c"}), Sources: pick(r, nil, []string{"A"}, []string{"A", "B"}), Relevance: float64(i) / 4})
	}
	for range pick(r, 0, 0, 1, 2) {
		a.Conflicts = append(a.Conflicts, Conflict{ID: "c", A: Claim{Source: "A", Statement: "x"}, B: Claim{Statement: "y"},
			Similarity: pick(r, 0, 0.5, 0.9), Resolved: r.IntN(3) == 0})
	}
	if r.IntN(4) == 0 {
		a.Context = []string{"", "flow"}
	}
	for range pick(r, 0, 0, 1, 2) {
		a.Questions = append(a.Questions, Question{Text: "q", Critical: r.IntN(2) == 0, Answered: r.IntN(2) == 0, Partial: r.IntN(3) == 0, Relevance: 0.5})
	}
	if r.IntN(2) == 0 {
		s := &a.Signals
		s.Confidence, s.Completeness, s.Quality = opt(), opt(), opt()
		if r.IntN(4) == 0 {
			s.Validation = []ValidationError{{Path: "$.a", Message: "m", Code: pick(r, "", CodeTypeMismatch), Critical: r.IntN(2) == 0}}
		}
		if r.IntN(4) == 0 {
			s.Hallucinations = []HallucinationFinding{{Type: "t", Claim: "c", Severity: pick(r, HallucinationWarning, HallucinationConfirmed)}}
		}
		if r.IntN(4) == 0 {
			s.Feedback = &Feedback{Negative: r.IntN(2) == 0, Message: "no"}
		}
		if r.IntN(4) == 0 {
			s.Requirements = []Requirement{{Description: "r", Required: r.IntN(2) == 0, Met: r.IntN(2) == 0}}
		}
		if r.IntN(6) == 0 {
			s.Rejected = "bad"
		}
		if r.IntN(3) == 0 {
			s.Tests = &TestResult{Passed: r.IntN(2) == 0, Failures: pick(r, nil, []TestCaseFailure{{Name: "TestA", Expected: "1", Received: "2"}})}
		}
		if r.IntN(3) == 0 {
			s.Review = &Review{Status: pick(r, ReviewApprove, ReviewReject), Issues: pick(r, nil, []string{"doc"})}
		}
	}
	return a
}

// TestDefaultEqualsCombinedSweep: Default, which skips Quality's plan for an
// assessment without signals (and the work of an assessment that measured
// nothing), finds exactly the gaps and errors of Combine(Research{},
// Quality{}) followed by Prioritize, over many generated assessments and
// thresholds.
func TestDefaultEqualsCombinedSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ctx := context.Background()
	combined := Combine(Research{}, Quality{})
	ratio := func() float64 { return pick(r, 0, 0, 0, -1, 0.5, 0.7, 0.9, 1, 1.5) }
	errs, found := 0, 0
	for i := range 20000 {
		a := randomAssessment(r)
		th := Thresholds{MinCoverage: ratio(), MinConfidence: ratio(), MinCompleteness: ratio(), MinQuality: ratio(),
			MinSignalConfidence: ratio(), MaxConflicts: pick(r, 0, -1, 3)}
		want, wantErr := combined.Analyze(ctx, a, th)
		if wantErr == nil {
			want = Prioritize(want, a)
		}
		if a.measuredNothing() {
			// Default's documented shortcut: no gaps, thresholds unread.
			want, wantErr = nil, nil
		}
		got, err := Default().Analyze(ctx, a, th)
		if wantErr != nil && (err == nil || err.Error() != wantErr.Error()) || wantErr == nil && err != nil {
			t.Fatalf("assessment %d: error %v, want %v\n%+v", i, err, wantErr, a)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("assessment %d: gaps (-combined +default):\n%s\n%+v", i, diff, a)
		}
		if err != nil {
			errs++
		}
		found += len(got)
	}
	if errs == 0 || found == 0 {
		t.Errorf("the sweep found %d errors and %d gaps: it must reach both", errs, found)
	}
}

// TestSortedMatchesSlices: sorted and prioritized, which read the gaps in
// place, agree with slices.IsSortedFunc and slices.IndexFunc over generated
// gaps (NaN relevance and severity included).
func TestSortedMatchesSlices(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 20000 {
		gaps := make([]Gap, r.IntN(6))
		for i := range gaps {
			gaps[i] = Gap{Priority: Priority(r.IntN(5)), Relevance: pick(r, 0, 0.5, 1, math.NaN()), Severity: pick(r, 0, 0.5, 1, math.NaN())}
		}
		if got, want := sorted(gaps), slices.IsSortedFunc(gaps, compareGaps); got != want {
			t.Fatalf("sorted(%v) = %v, want %v", gaps, got, want)
		}
		want := slices.IndexFunc(gaps, func(g Gap) bool { return !validPriority(g.Priority) }) < 0
		if got := prioritized(gaps); got != want {
			t.Fatalf("prioritized(%v) = %v, want %v", gaps, got, want)
		}
	}
}
