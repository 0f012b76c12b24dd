package iterate

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// testEncoder is a recordEncoder with a count of the durations it was
// given.
type testEncoder struct {
	recordEncoder
	pushed int
}

// checkEncoding encodes d with e and with json.Marshal and fails unless the
// bytes, or the errors, are the same. d.Durations count as new durations.
func checkEncoding(t *testing.T, e *testEncoder, d *engineData) {
	t.Helper()
	e.pushed += len(d.Durations)
	checkEncodingPushed(t, e, d, e.pushed)
}

// checkEncodingPushed is checkEncoding of the durations window that has
// had pushed durations.
func checkEncodingPushed(t *testing.T, e *testEncoder, d *engineData, pushed int) {
	t.Helper()
	want, wantErr := json.Marshal(d)
	got, gotErr := e.encode(d, pushed)
	if (wantErr != nil) != (gotErr != nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("error %v, json.Marshal's %v", gotErr, wantErr)
	}
	if wantErr == nil && string(got) != string(want) {
		t.Fatalf("encoding differs from json.Marshal's:\n got %s\nwant %s", got, want)
	}
}

// TestRecordEncoderMatchesJSON holds the record's hand-written encoding to
// json.Marshal's, byte for byte, over every field and the edge cases of
// strings, floats and times.
func TestRecordEncoderMatchesJSON(t *testing.T) {
	strs := []string{"", "plain", `quo"te`, `back\slash`, "<html> & co", "tab\tnew\nline", "ünïcödé", "bad \xff utf8",
		"line\u2028sep", "\x7f del", "ctrl \x01",
		// Each character that must leave the fast path, alone (issue 24:
		// with another character beside it, a weakened test let it through).
		`"`, `\`, "<", ">", "&", "\x1f", "\x80", " "}
	floats := []float64{0, 1, -1, 0.7, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789e15, math.Copysign(0, -1),
		math.SmallestNonzeroFloat64, math.MaxFloat64}
	times := []time.Time{{}, time.Unix(0, 0).UTC(), time.Unix(1_800_000_000, 123456789).UTC(),
		time.Date(2026, 11, 23, 19, 0, 0, 120, time.FixedZone("x", 5*3600+30*60)),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("y", -7*3600)), time.Now()}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(n int) int { return rng.IntN(n) }
	str := func() string { return strs[pick(len(strs))] }
	flt := func() float64 { return floats[pick(len(floats))] }
	num := func() int { return []int{0, 1, -3, 42, math.MaxInt32, math.MinInt}[pick(6)] }
	list := func() []string {
		switch pick(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{str(), str()}
	}
	gaps := func() []gap.Gap {
		if pick(3) == 0 {
			return nil
		}
		var gs []gap.Gap
		for range pick(3) {
			gs = append(gs, gap.Gap{Kind: gap.Kind(str()), Priority: gap.Priority(pick(4)), Severity: flt(), Fixable: pick(2) == 0,
				Target: str(), Detail: str(), Source: str(), Relevance: flt(), Focus: list()})
		}
		return gs
	}
	usage := func() budget.Usage {
		return budget.Usage{Iterations: num(), Tokens: int64(num()), Cost: flt(), Wall: time.Duration(num()), Calls: int64(num()),
			InputTokens: int64(num()), OutputTokens: int64(num()), CacheReadTokens: int64(num()), CacheWriteTokens: int64(num())}
	}
	outcome := func() converge.Attempt {
		if pick(2) == 0 {
			return converge.Attempt{}
		}
		a := converge.Attempt{Failed: pick(2) == 0, Action: str(), Duration: time.Duration(num()), Tasks: num(), FailedTasks: num(),
			Tokens: int64(num()), Cost: flt(), Calls: int64(num())}
		switch pick(3) {
		case 0:
			a.TaskRuns = []converge.TaskRun{}
		case 1:
			for range 1 + pick(2) {
				a.TaskRuns = append(a.TaskRuns, converge.TaskRun{Role: str(), Kind: gap.Kind(str()), Target: str(),
					Duration: time.Duration(num()), Tokens: int64(num()), Err: str(), Output: str()})
			}
		}
		a.Actions = list()
		return a
	}
	e := &testEncoder{}
	var prevBest *bestRecord
	for i := range 3000 {
		d := engineData{Version: recordVersion, StartedAt: times[pick(len(times))], LastIterationAt: times[pick(len(times))],
			Elapsed: time.Duration(num()), Usage: usage(), Gaps: gaps(), Complete: pick(2) == 0, AnsweredAt: num(), StateVersion: num(),
			Answer: str(), Unresolved: gaps(), Totals: Totals{num(), num(), num(), time.Duration(num())},
			Decision: converge.Decision{Verdict: converge.Verdict(pick(8)), Reason: str()}}
		if pick(2) == 0 {
			d.Completed = usage()
		}
		if pick(4) > 0 {
			d.Settings = []setting{{str(), str()}, {"coverage threshold", "0.70"}}
		} else if pick(2) == 0 {
			d.Settings = []setting{}
		}
		for range pick(3) {
			d.Durations = append(d.Durations, time.Duration(num()))
			d.Decision.Criteria = append(d.Decision.Criteria, converge.Criterion{Name: str(), Value: flt(), Threshold: flt(), Met: pick(2) == 0, Detail: str()})
			d.Journal = append(d.Journal, entry{Iteration: num(), Index: num(), Role: str(), Key: str(),
				Part: []byte(str()), Usage: usage(), Done: pick(2) == 0, Err: str(), Permanent: pick(2) == 0,
				Duration: time.Duration(num()), Output: str(), Actions: list()})
		}
		switch pick(4) {
		case 0:
			d.Best = &bestRecord{Iteration: num(), Score: flt(), Generation: rng.Uint64() >> pick(64), State: []byte(str())}
		case 1:
			d.Best = &bestRecord{Score: flt()} // no state: null
		case 2:
			if prevBest != nil && pick(2) == 0 {
				d.Best = prevBest // the same record again: from the cache
			}
		}
		prevBest = d.Best
		if pick(2) == 0 {
			d.Escalation = &Escalation{Iteration: num(), Reason: str(), Attempts: list(), Pattern: str(), Question: str(), Feedback: str()}
			if pick(2) == 0 { // a deadline (WithQuestionDeadline)
				d.Escalation.Deadline, d.Escalation.RemindAt, d.Escalation.Reminded = times[pick(len(times))], times[pick(len(times))], times[pick(len(times))]
				d.Escalation.OnExpiry, d.Escalation.Default = Expiry(str()), str()
				for range pick(3) {
					d.Escalation.Extensions = append(d.Escalation.Extensions, DeadlineExtension{By: str(), At: times[pick(len(times))], From: times[pick(len(times))], To: times[pick(len(times))]})
				}
			}
		}
		for range pick(3) { // WithCrashLoopBound's
			d.InFlight = append(d.InFlight, crashCount{Task: str(), Iteration: num()})
			d.Crashes = append(d.Crashes, crashCount{Task: str(), Iteration: num(), Count: num()})
		}
		if pick(4) > 0 {
			h := &converge.History{Iteration: 1000 + i, MaxIterations: num(), Window: num(), ConsecutiveFailures: num(),
				Failures: num(), Unchanged: num(), WorkRemaining: list(), BestScore: flt(), BestIteration: num(), Pending: outcome()}
			for k := range pick(4) {
				r := converge.Record{Iteration: 1000*i + k, Coverage: flt(), Confidence: flt(), Score: flt(), Conflicts: num(),
					Gaps: num(), Fixable: num(), Triggers: rng.Uint64() >> pick(64), Summary: str(), Attempt: outcome()}
				if pick(2) == 0 {
					r.Scores = map[string]float64{str(): flt(), "b": flt(), "a": flt()}
				}
				switch pick(3) {
				case 0:
					r.Kinds = map[gap.Kind]int{gap.Kind(str()): num(), "coverage": num()}
				case 1:
					r.Kinds = map[gap.Kind]int{}
				}
				if pick(2) == 0 {
					r.Priorities = [3]int{pick(3), 0, num()}
				}
				r.Verdict = converge.Verdict(pick(3))
				switch pick(3) {
				case 0:
					r.Unmet = []converge.Criterion{}
				case 1:
					r.Unmet = []converge.Criterion{{Name: str(), Value: flt(), Threshold: flt(), Detail: str()}, {Name: str(), Met: true}}
				}
				h.Recent = append(h.Recent, r)
			}
			d.History = h
		}
		checkEncoding(t, e, &d)
	}
}

// TestRecordEncoderErrors holds the record's encoding errors to
// json.Marshal's: times beyond RFC 3339. (Floats that are not finite,
// which json.Marshal refuses, are encoded: see
// TestRecordEncoderNonFiniteRoundTrip.)
func TestRecordEncoderErrors(t *testing.T) {
	e := &testEncoder{}
	times := []time.Time{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("z", -100*3600))}
	// Every zone offset of 24 hours or more is refused by json.Marshal,
	// which the fast path of the encoder must not take: each hour of two
	// digits (each digit in each place, and the 70s and 80s, where the
	// byte arithmetic of issue 24's surviving mutants wraps below 24),
	// three digits starting with 9 and four with a 0 before the last two
	// (the digit check of the character before the hours' last two).
	for _, h := range []int{24, 25, 29, 30, 39, 42, 59, 70, 75, 79, 80, 87, 90, 99, 900, 999, 1000} {
		for _, sign := range []int{1, -1} {
			times = append(times, time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("z", sign*(h*3600+30*60))))
		}
	}
	for _, tm := range times {
		checkEncoding(t, e, &engineData{LastIterationAt: tm})
		checkEncoding(t, e, &engineData{StartedAt: tm})
		checkEncoding(t, e, &engineData{StartedAt: tm})
	}
}

// TestRecordEncoderCache encodes the record of a loop's history at every
// iteration with one encoder, through the window's slides, a
// re-assessment and a history replaced as on a resume.
func TestRecordEncoderCache(t *testing.T) {
	settings := []setting{{"max iterations", "100"}}
	started := time.Now()
	for _, window := range []int{0, 1, 3} {
		t.Run("window="+strconv.Itoa(window), func(t *testing.T) {
			e := &testEncoder{}
			h := converge.History{Window: window}
			durations := newWindow[time.Duration](max(window, 1))
			save := func() {
				t.Helper()
				checkEncodingPushed(t, e, &engineData{Version: recordVersion, Settings: settings, StartedAt: started, History: &h,
					Durations: durations.values()}, durations.pushed)
			}
			for n := range 80 {
				a := gap.Assessment{Score: float64(n%10) / 10, WorkRemaining: []string{strconv.Itoa(n % 7)}}
				h.Observe(a, []gap.Gap{{Kind: gap.Coverage, Detail: strconv.Itoa(n)}})
				save() // the latest record is not final
				if n%9 == 0 {
					a.Score = 0.99 // re-assessment: the latest record changes
					h.Observe(a, nil)
					save()
				}
				h.Complete(converge.Attempt{Action: "refine", Duration: time.Duration(n), Tasks: 1, Failed: n%5 == 0})
				durations.push(time.Duration(n * 1000))
				save()
				if n == 40 {
					// A history restored as a resume restores it, under a
					// new run's encoder.
					data, err := json.Marshal(&h)
					if err != nil {
						t.Fatal(err)
					}
					h = converge.History{}
					if err := json.Unmarshal(data, &h); err != nil {
						t.Fatal(err)
					}
					e = &testEncoder{}
					save()
					durations.set([]time.Duration{1, 2, 3, 4}) // as restore sets them
					save()
				}
				if n == 60 {
					// A window that no longer starts with the cached
					// records' iterations.
					h.Recent = h.Recent[len(h.Recent)-1:]
					save()
				}
			}
			if kept := len(e.recent.keys) - e.recent.first; window == 1 && kept > 1 {
				t.Errorf("cache holds %d encodings for a window of 1", kept)
			}
			// The dropped encodings are let go of once they outnumber the
			// kept ones: the cache's memory follows the window, not the
			// run. (Mutant caught: the move to the front skipped.)
			w := window
			if w == 0 {
				w = converge.DefaultWindow
			}
			if len(e.recent.keys) > 2*w+2 {
				t.Errorf("cache lists %d encodings for a window of %d", len(e.recent.keys), w)
			}
		})
	}
	t.Run("settings change", func(t *testing.T) {
		e := &testEncoder{}
		checkEncoding(t, e, &engineData{Settings: settings, StartedAt: started})
		checkEncoding(t, e, &engineData{Settings: []setting{{"other", "1"}}, StartedAt: started})
		checkEncoding(t, e, &engineData{Settings: settings, StartedAt: started.Add(time.Second)})
		checkEncoding(t, e, &engineData{Settings: settings, StartedAt: time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)})
		checkEncoding(t, e, &engineData{Settings: settings, StartedAt: started})
		checkEncoding(t, e, &engineData{Version: 2, Settings: settings, StartedAt: started})
	})
}

// TestSameSlice: sameSlice tells the same slice from an equal one, or from
// another view of the same array. (Mutants caught: each of its
// comparisons negated, issue 24's survivors at its len and cap.)
func TestSameSlice(t *testing.T) {
	s := make([]int, 3, 4)
	for _, tt := range []struct {
		name string
		a, b []int
		want bool
	}{
		{"both nil", nil, nil, true},
		{"itself", s, s, true},
		{"empty, not nil, and nil", []int{}, nil, false},
		{"a shorter view", s[:2], s, false},
		{"a smaller capacity", s[:3:3], s, false},
		{"another part of the array", s[0:2:2], s[1:3:3], false},
		{"an equal copy", []int{0, 0, 0}, s, false},
	} {
		if got := sameSlice(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: sameSlice = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestEncodedWindowStartsOver: a window that does not continue the cached
// one (it starts before it, ends elsewhere, or is shorter) is encoded
// afresh, not from the cache; a value's key always names the same value.
// (Mutants caught: each of the three checks of appendArray's start-over
// negated or reversed, issue 24's survivors judged by reading before.)
func TestEncodedWindowStartsOver(t *testing.T) {
	var c encodedWindow
	for _, keys := range [][]int{
		{1, 2, 3, 4},
		{0, 1, 2, 3}, // starts before the cached window
		{1, 2, 3, 4},
		{0, 2, 3, 4}, // another start, the same end
		{1, 2, 3, 4},
		{1, 2, 5, 6}, // the same start, another end
		{1, 2, 3, 4},
		{1, 2},       // fewer values than cached
		{2, 3, 4, 5}, // a slide: from the cache
	} {
		var j jsonBuf
		c.appendArray(&j, len(keys), func(i int) int { return keys[i] }, func(int) bool { return true },
			func(j *jsonBuf, i int) { j.int(int64(100 + keys[i])) })
		want := ""
		for i, k := range keys {
			if i > 0 {
				want += ","
			}
			want += strconv.Itoa(100 + k)
		}
		if got := string(j.b); got != "["+want+"]" {
			t.Errorf("window of keys %v: %s, want [%s]", keys, got, want)
		}
	}
}

// TestRecordEncoderErrorOfACachedRecord: a value of the window that does
// not encode is not cached, so its error is reported at every save, also
// once it is final and the next ones follow. (Mutant caught: appendArray
// caching on an error instead of stopping.)
func TestRecordEncoderErrorOfACachedRecord(t *testing.T) {
	var c encodedWindow
	bad := errors.New("bad value")
	for range 3 {
		var j jsonBuf
		c.appendArray(&j, 4, func(i int) int { return i }, func(int) bool { return true }, func(j *jsonBuf, i int) {
			j.int(int64(i))
			if i == 0 {
				j.err = bad
			}
		})
		if j.err != bad || string(j.b) != "[0,1,2,3]" {
			t.Fatalf("%s, %v; want [0,1,2,3], %v", j.b, j.err, bad)
		}
	}
}
