package converge

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/gap"
)

// pick returns one of vs at random.
func pick[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

// randomThresholds returns thresholds with fields at their default (zero),
// disabled (negative), tiny, ordinary or at the edge.
func randomThresholds(r *rand.Rand) gap.Thresholds {
	ratio := func() float64 { return pick(r, 0, 0, 0, -1, 1e-10, 0.3, 0.6, 0.7, 0.85, 0.9, 1) }
	return gap.Thresholds{
		MinCoverage:         ratio(),
		MinConfidence:       ratio(),
		MaxConflicts:        pick(r, 0, 0, -1, 1, 2, 5),
		AllowUnanswered:     r.IntN(4) == 0,
		EarlyCoverage:       ratio(),
		EarlyConfidence:     ratio(),
		MinCompleteness:     ratio(),
		MinQuality:          ratio(),
		MinSignalConfidence: ratio(),
	}
}

// randomAssessment returns an assessment that measured nothing about half
// of the time, and otherwise some of coverage, confidence, findings,
// conflicts, questions, signals and completion.
func randomAssessment(r *rand.Rand) gap.Assessment {
	var a gap.Assessment
	if r.IntN(2) == 0 {
		if r.IntN(4) == 0 {
			a.Score = r.Float64()
		}
		return a
	}
	ratio := func() float64 { return pick(r, 0, 0, 1e-10, 0.4, 0.69, 0.7, 0.8, 0.85, 0.9, 0.95, 1) }
	if r.IntN(2) == 0 {
		a.Coverage = ratio()
	}
	if r.IntN(3) == 0 {
		a.EstimatedFiles = pick(r, 0, 1, 10, 100)
		a.FilesAnalyzed = pick(r, 0, 1, 9, 50, 100, 200)
	}
	if r.IntN(2) == 0 {
		a.Confidence = ratio()
	}
	for range pick(r, 0, 0, 1, 3) {
		a.Findings = append(a.Findings, gap.Finding{ID: "f", Confidence: ratio()})
	}
	for range pick(r, 0, 0, 1, 3, 4) {
		a.Conflicts = append(a.Conflicts, gap.Conflict{ID: "c", Similarity: pick(r, 0, 0.5, 0.9), Resolved: r.IntN(3) == 0})
	}
	for range pick(r, 0, 0, 1, 2) {
		a.Questions = append(a.Questions, gap.Question{Text: "q", Critical: r.IntN(2) == 0, Answered: r.IntN(2) == 0, Partial: r.IntN(4) == 0})
	}
	switch r.IntN(6) {
	case 0:
		a.Signals.Tests = &gap.TestResult{Passed: r.IntN(2) == 0}
	case 1:
		a.Signals.Review = &gap.Review{Status: pick(r, gap.ReviewApprove, gap.ReviewReject, gap.ReviewPending)}
	case 2:
		a.Signals.Tests = &gap.TestResult{Passed: r.IntN(2) == 0}
		a.Signals.Review = &gap.Review{Status: pick(r, gap.ReviewApprove, gap.ReviewReject)}
	}
	a.Complete = r.IntN(8) == 0
	return a
}

// randomHistory returns a history with random counters, limit, thresholds
// and latest assessment.
func randomHistory(r *rand.Rand) *History {
	h := &History{
		MaxIterations:    pick(r, 0, 1, 3, 10),
		Thresholds:       randomThresholds(r),
		FailureThreshold: pick(r, 0, 0, -1, 1, 2, 5),
	}
	steps := pick(r, 1, 2, 4, 11)
	for i := 0; i < steps; i++ {
		if i > 0 {
			h.Complete(Attempt{Failed: r.IntN(3) == 0})
		}
		a := randomAssessment(r)
		if r.IntN(2) == 0 {
			a.WorkRemaining = []string{pick(r, "x", "y")}
		}
		h.Observe(a, nil)
	}
	return h
}

// TestDefaultEqualsAnySweep compares Default, whose Decide asks the policies'
// predicates before building their decisions, with the Any of its policies
// over many generated histories, so that the two cannot drift apart.
func TestDefaultEqualsAnySweep(t *testing.T) {
	anyOfThem := Any(Done{}, Passing{}, HighConfidence{}, ThresholdsMet{}, Failures{}, NoProgress{}, IterationLimit{})
	r := rand.New(rand.NewPCG(1, 2))
	verdicts := map[Verdict]int{}
	for i := range 20000 {
		h := randomHistory(r)
		want, got := anyOfThem.Decide(h), Default().Decide(h)
		verdicts[got.Verdict]++
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("history %d: Default differs from Any (-any +default):\n%s\nhistory: %+v", i, diff, h)
		}
	}
	t.Logf("verdicts: %v", verdicts)
	// The sweep must reach every verdict the policies give.
	for v := Continue; v <= Aborted; v++ {
		if verdicts[v] == 0 && v != Plateau {
			t.Errorf("no history decided %v: %v", v, verdicts)
		}
	}
}

// TestThresholdLevels: limits and earlyLevels read the fields of
// gap.Thresholds.Effective without copying them.
func TestThresholdLevels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		th := randomThresholds(r)
		eff := th.Effective()
		minCov, minConf, maxConflicts := limits(&th)
		if want := max(eff.MinCoverage, 0); minCov != want {
			t.Errorf("limits(%+v) coverage = %v, want %v", th, minCov, want)
		}
		if want := max(eff.MinConfidence, 0); minConf != want {
			t.Errorf("limits(%+v) confidence = %v, want %v", th, minConf, want)
		}
		if want := max(eff.MaxConflicts, 0); maxConflicts != want {
			t.Errorf("limits(%+v) conflicts = %v, want %v", th, maxConflicts, want)
		}
		if c, f := earlyLevels(&th); c != eff.EarlyCoverage || f != eff.EarlyConfidence {
			t.Errorf("earlyLevels(%+v) = %v, %v, want %v, %v", th, c, f, eff.EarlyCoverage, eff.EarlyConfidence)
		}
	}
}

// TestRecordRelease: release drops every reference a Record holds, so that
// a record dropped from the window keeps nothing alive (as clear would).
func TestRecordRelease(t *testing.T) {
	r := Record{Iteration: 1, Scores: map[string]float64{"a": 1}, Summary: "s", Attempt: Attempt{Action: "retry"}}
	r.release()
	var check func(path string, v reflect.Value)
	check = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				check(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Map, reflect.String, reflect.Slice, reflect.Pointer, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
			if !v.IsZero() {
				t.Errorf("release kept %s", path)
			}
		}
	}
	// Set every field, so that a reference field added later and not
	// released fails here.
	full := reflect.ValueOf(&r).Elem()
	fillAll(t, full)
	r.release()
	check("Record", full)
}

// TestRecordSetOverwritesEveryField: set assigns every field of the record
// (a reused slot, or the record of a re-assessed state), so that nothing of
// what the slot held before survives; a field added to Record and not to
// set fails here.
func TestRecordSetOverwritesEveryField(t *testing.T) {
	var r Record
	fillAll(t, reflect.ValueOf(&r).Elem())
	r.set(3, &gap.Assessment{}, nil, &Attempt{})
	if diff := cmp.Diff(Record{Iteration: 3}, r); diff != "" {
		t.Errorf("set left fields of the slot (-want +got):\n%s", diff)
	}
}

// observeReference is History.Observe as it was before it set the record in
// its window slot: the record built aside, then appended (the window's
// sliding kept as the slice of the latest Window records).
func observeReference(h *History, a gap.Assessment, gaps []gap.Gap) {
	h.Current = a
	h.Gaps = gaps
	rec := Record{
		Iteration:  h.Iteration,
		Coverage:   a.CoverageRatio(),
		Confidence: a.AverageConfidence(),
		Score:      a.Score,
		Conflicts:  a.UnresolvedConflicts(),
		Gaps:       len(gaps),
		Triggers:   triggerDigest(gaps),
		Attempt:    h.Pending,
	}
	for i := range gaps {
		if rec.Kinds == nil {
			rec.Kinds = map[gap.Kind]int{}
		}
		rec.Kinds[gaps[i].Kind]++
		if p := gaps[i].Priority; p >= gap.P1 && p <= gap.P3 {
			rec.Priorities[p-1]++
		}
	}
	if len(a.Scores) > 0 {
		rec.Scores = maps.Clone(a.Scores)
	}
	for i := range gaps {
		if gaps[i].Fixable {
			rec.Fixable++
		}
	}
	if len(gaps) > 0 {
		rec.Summary = summarize(&gaps[0])
	}
	h.Pending = Attempt{}
	if last := h.Last(); last != nil && last.Iteration == h.Iteration {
		if !slices.Equal(a.WorkRemaining, h.WorkRemaining) {
			h.Unchanged = 0
			h.WorkRemaining = append(h.WorkRemaining[:0], a.WorkRemaining...)
		}
		rec.Attempt = last.Attempt
		*last = rec
		if a.Score > h.BestScore {
			h.BestScore, h.BestIteration = a.Score, h.Iteration
		}
		return
	}
	if len(a.WorkRemaining) > 0 && len(h.Recent) > 0 && slices.Equal(a.WorkRemaining, h.WorkRemaining) {
		h.Unchanged++
	} else {
		h.Unchanged = 0
	}
	h.WorkRemaining = append(h.WorkRemaining[:0], a.WorkRemaining...)
	if len(h.Recent) == 0 || a.Score > h.BestScore {
		h.BestScore, h.BestIteration = a.Score, h.Iteration
	}
	w := h.Window
	if w <= 0 {
		w = DefaultWindow
	}
	h.Recent = append(h.Recent, rec)
	if len(h.Recent) > w {
		h.Recent = slices.Clone(h.Recent[len(h.Recent)-w:])
	}
}

// TestObserveMatchesReference runs Observe and the reference side by side
// over generated loops (re-assessments, window changes as after a resume,
// failures, scores, gaps) and compares the histories after every step.
func TestObserveMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	ignore := cmpopts.IgnoreUnexported(History{})
	for loop := range 40 {
		window := pick(r, 0, 1, 2, 3, 5)
		got, want := &History{Window: window}, &History{Window: window}
		for step := range 40 {
			if step > 0 && r.IntN(5) != 0 { // else: a re-assessment of the same state
				o := Attempt{Failed: r.IntN(4) == 0, Action: pick(r, "retry", "expand", ""), Tasks: r.IntN(3)}
				got.Complete(o)
				want.Complete(o)
			}
			if r.IntN(20) == 0 { // the window shrinks or grows, as after a resume
				w := pick(r, 0, 1, 2, 4)
				got.Window, want.Window = w, w
			}
			a := randomAssessment(r)
			if r.IntN(3) == 0 {
				a.Scores = map[string]float64{"m": r.Float64()}
			}
			if r.IntN(2) == 0 {
				a.WorkRemaining = []string{pick(r, "x", "y")}
			}
			var gaps []gap.Gap
			for range pick(r, 0, 0, 1, 2) {
				gaps = append(gaps, gap.Gap{Kind: pick(r, gap.Coverage, gap.TestFailure), Target: pick(r, "", "t"),
					Detail: pick(r, "", "d", "t failed"), Fixable: r.IntN(2) == 0, Priority: gap.Priority(r.IntN(5))})
			}
			got.Observe(a, gaps)
			observeReference(want, a, gaps)
			if diff := cmp.Diff(want, got, ignore, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("loop %d, step %d: Observe differs from the reference (-want +got):\n%s", loop, step, diff)
			}
		}
	}
}

// fillAll sets every field of the struct v (and of the structs in it) to
// a value that is not zero.
func fillAll(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillAll(t, v.Field(i))
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Array:
		for i := range v.Len() {
			fillAll(t, v.Index(i))
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint64:
		v.SetUint(7)
	case reflect.Float64:
		v.SetFloat(7)
	default:
		t.Fatalf("fillAll: unexpected kind %v", v.Kind())
	}
}
