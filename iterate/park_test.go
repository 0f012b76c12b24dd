package iterate_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// reader reads one file an iteration, charging 65 tokens and 2 calls;
// its coverage is a tenth of a file each. It records the answers its
// tasks receive.
type reader struct {
	score   float64 // the score every assessment reports
	mu      sync.Mutex
	answers []string
}

func (w *reader) worker() *iterate.FuncWorker[int] {
	return &iterate.FuncWorker[int]{
		Do: func(_ context.Context, files int, r iterate.Round) (int, error) {
			w.mu.Lock()
			w.answers = append(w.answers, r.Task.Answer)
			w.mu.Unlock()
			r.Charge(budget.Usage{Tokens: 65, Calls: 2})
			return files + 1, nil
		},
		AssessFunc: func(_ context.Context, files int) (gap.Assessment, error) {
			return gap.Assessment{FilesAnalyzed: files, EstimatedFiles: 10, Score: w.score}, nil
		},
	}
}

// parking returns an engine of w on store parking at the limits l, as a
// process of its own would build it.
func parking(w *reader, store iterate.Checkpointer, l budget.Limits, opts ...iterate.Option) iterate.Engine[int] {
	return iterate.New(w.worker(), append([]iterate.Option{iterate.WithCheckpointer(store), iterate.WithMaxIterations(0),
		iterate.WithBudget(l), iterate.WithParkAtLimit()}, opts...)...)
}

// TestParkAtLimitAsks guards "a limit parks the loop instead of stopping
// it: it escalates with a question": reaching a limit (tokens, which the
// next iteration's estimate would exceed; calls, spent to the limit) ends
// the run Escalated with an *EscalationError whose Escalation.Parked
// names the limit reached, the limits, the spend and the coverage, and
// whose question says so; the question and Parked are saved with the
// session (a Resume from another engine without an answer returns them).
// Mutations caught: atLimit bypassed (budget_exhausted), Parked not
// encoded in the record (nil after the Resume), the estimate's limit not
// named (Reached 0).
func TestParkAtLimitAsks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limits   budget.Limits
		reached  budget.Resource
		question string
	}{
		{"tokens_by_estimate", budget.Limits{Tokens: 200}, budget.Tokens, "195 of 200 tokens spent at coverage 0.3; extend the budget?"},
		{"calls_spent", budget.Limits{Calls: 6}, budget.Calls, "6 of 6 calls spent at coverage 0.3; extend the budget?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &checkpoint.Memory{}
			res, err := parking(&reader{}, store, tc.limits).Run(context.Background(), 0)
			var ee *iterate.EscalationError
			if !errors.As(err, &ee) || res.Status != iterate.Escalated || res.Iterations != 3 {
				t.Fatalf("run: %v, %s after %d iterations; want escalated after 3", err, res.Status, res.Iterations)
			}
			want := &iterate.Parked{Reached: tc.reached, Limits: tc.limits, Spent: budget.Usage{Iterations: 3, Tokens: 195, Calls: 6}, Coverage: 0.3}
			p := ee.Escalation.Parked
			if p != nil {
				p.Spent.Wall = 0 // what the run took
			}
			if diff := cmp.Diff(want, p); diff != "" {
				t.Errorf("parked (-want +got):\n%s", diff)
			}
			if q := ee.Escalation.Question; q != tc.question {
				t.Errorf("question %q, want %q", q, tc.question)
			}
			if !strings.HasPrefix(res.Reason, "budget exhausted: ") {
				t.Errorf("reason %q", res.Reason)
			}
			saved, _ := store.Load(context.Background(), iterate.DefaultSession)
			if saved.Status != string(iterate.Escalated) || saved.Question != tc.question {
				t.Errorf("saved %s with question %q", saved.Status, saved.Question)
			}
			again, err := parking(&reader{}, store, tc.limits).Resume(context.Background())
			if !errors.Is(err, iterate.ErrEscalated) || again.Escalation == nil || again.Escalation.Parked == nil ||
				again.Escalation.Parked.Reached != tc.reached || again.Escalation.Question != tc.question {
				t.Fatalf("resumed without an answer: %v, escalation %+v", err, again.Escalation)
			}
		})
	}
}

// TestParkExtendKeepsBooks guards "whose answer may carry the
// extension": ExtendBudget alone answers the parked question, from
// another engine (another process), and the session continues in place
// with every counter kept, parking again at the raised limit with the
// books of a session that had it from the start; the extension is
// recorded. With WithAnswer beside it, the answer's text reaches the next
// task (and the session goes on to converge). Mutations caught: the extension not taken as the answer (the
// *EscalationError again), the counters reset (6 iterations and 390
// tokens not reached), the extension not recorded, the answer's text
// dropped.
func TestParkExtendKeepsBooks(t *testing.T) {
	ctx := context.Background()
	store := &checkpoint.Memory{}
	l200, l400 := budget.Limits{Tokens: 200}, budget.Limits{Tokens: 400}
	if _, err := parking(&reader{}, store, l200).Run(ctx, 0); !errors.Is(err, iterate.ErrEscalated) {
		t.Fatal(err)
	}
	res, err := parking(&reader{}, store, l200).Resume(ctx, iterate.ExtendBudget(l400, "alice"))
	if !errors.Is(err, iterate.ErrEscalated) || res.Escalation.Parked == nil {
		t.Fatalf("extended: %v, %s", err, res.Status)
	}
	want, err := parking(&reader{}, &checkpoint.Memory{}, l400).Run(ctx, 0)
	if !errors.Is(err, iterate.ErrEscalated) {
		t.Fatal(err)
	}
	res.Usage.Wall, want.Usage.Wall, res.Totals.Duration, want.Totals.Duration = 0, 0, 0, 0
	if res.Iterations != 6 || res.State != 6 || res.Usage != want.Usage || res.Totals != want.Totals {
		t.Fatalf("extended: %d iterations, state %d, usage %+v, totals %+v; want as a 400-token run: %d, %+v, %+v",
			res.Iterations, res.State, res.Usage, res.Totals, want.Iterations, want.Usage, want.Totals)
	}
	if diff := cmp.Diff(want.History, res.History, cmpopts.IgnoreUnexported(converge.History{}),
		cmpopts.IgnoreFields(converge.Attempt{}, "Duration"), cmpopts.IgnoreFields(converge.TaskRun{}, "Duration")); diff != "" {
		t.Errorf("history (-parked at 400 +extended from 200):\n%s", diff)
	}
	if q := res.Escalation.Question; q != want.Escalation.Question {
		t.Errorf("question %q, want %q", q, want.Escalation.Question)
	}
	if x := res.Extensions; len(x) != 1 || x[0].By != "alice" || x[0].Iteration != 3 || x[0].From != l200 || x[0].To != l400 {
		t.Errorf("extensions %+v", x)
	}

	w := &reader{}
	l600 := budget.Limits{Tokens: 600}
	res, err = parking(w, store, l200).Resume(ctx, iterate.WithAnswer("read the tests too"), iterate.ExtendBudget(l600, "bob"))
	if err != nil || res.Status != iterate.Converged || res.Iterations != 7 || len(res.Extensions) != 2 {
		t.Fatalf("answered and extended: %v, %s after %d iterations, extensions %+v; want converged at coverage 0.7",
			err, res.Status, res.Iterations, res.Extensions)
	}
	if len(w.answers) == 0 || w.answers[0] != "read the tests too" {
		t.Errorf("the tasks' answers %q, want the answer first", w.answers)
	}
}

// TestParkAnswerWithoutExtension guards the documented choice: an answer
// without an extension stops the parked session budget_exhausted, the
// answer quoted in its reason, for good (a later Resume returns it), and
// ExtendBudget can still continue it. Mutation caught: the answer taken
// as leave to go on (the loop runs, reaches the limit and parks again:
// escalated).
func TestParkAnswerWithoutExtension(t *testing.T) {
	ctx := context.Background()
	store := &checkpoint.Memory{}
	l200 := budget.Limits{Tokens: 200}
	if _, err := parking(&reader{}, store, l200).Run(ctx, 0); !errors.Is(err, iterate.ErrEscalated) {
		t.Fatal(err)
	}
	w := &reader{}
	res, err := parking(w, store, l200).Resume(ctx, iterate.WithAnswer("enough"))
	if err != nil || res.Status != iterate.BudgetExhausted || res.Iterations != 3 || len(w.answers) != 0 {
		t.Fatalf("answered without an extension: %v, %s after %d iterations, %d tasks run", err, res.Status, res.Iterations, len(w.answers))
	}
	if !strings.HasSuffix(res.Reason, `; answered without an extension: "enough"`) {
		t.Errorf("reason %q", res.Reason)
	}
	if res, err := parking(&reader{}, store, l200).Resume(ctx); err != nil || res.Status != iterate.BudgetExhausted {
		t.Fatalf("resumed again: %v, %s", err, res.Status)
	}
	res, err = parking(&reader{}, store, l200).Resume(ctx, iterate.ExtendBudget(budget.Limits{Tokens: 400}, "carol"))
	if !errors.Is(err, iterate.ErrEscalated) || res.Iterations != 6 || res.Escalation.Parked == nil {
		t.Fatalf("extended after the stop: %v, %s after %d", err, res.Status, res.Iterations)
	}
}

// TestParkedQuestionDeadline guards "a question deadline applies to it
// as to any escalation": past the deadline, under ExpireStop the parked
// session ends Expired; under ExpireAnswer its default answer, which
// carries no extension, stops it budget_exhausted. A QuestionExpired is
// sent either way; before the deadline the question stands. Mutation
// caught: a parked question's Resume skipping the deadline (escalated
// past it).
func TestParkedQuestionDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    iterate.Deadline
		want iterate.Status
	}{
		{"stop", iterate.Deadline{After: time.Hour}, iterate.Expired},
		{"answer", iterate.Deadline{After: time.Hour, OnExpiry: iterate.ExpireAnswer, Default: "no"}, iterate.BudgetExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				store := &checkpoint.Memory{}
				l := budget.Limits{Tokens: 200}
				res, err := parking(&reader{}, store, l, iterate.WithQuestionDeadline(tc.d)).Run(ctx, 0)
				if !errors.Is(err, iterate.ErrEscalated) || !res.Escalation.Deadline.Equal(time.Now().Add(time.Hour)) {
					t.Fatalf("run: %v, deadline %v", err, res.Escalation.Deadline)
				}
				time.Sleep(time.Hour - time.Second)
				if _, err := parking(&reader{}, store, l, iterate.WithQuestionDeadline(tc.d)).Resume(ctx); !errors.Is(err, iterate.ErrEscalated) {
					t.Fatalf("before the deadline: %v", err)
				}
				time.Sleep(time.Second)
				rec := &iteratetest.Recorder{}
				res, err = parking(&reader{}, store, l, iterate.WithQuestionDeadline(tc.d), iterate.WithObserver(rec.Observe)).Resume(ctx)
				if err != nil || res.Status != tc.want || res.Iterations != 3 {
					t.Fatalf("at the deadline: %v, %s after %d; want %s after 3", err, res.Status, res.Iterations, tc.want)
				}
				if n := len(iteratetest.Of[iterate.QuestionExpired](rec)); n != 1 {
					t.Errorf("%d QuestionExpired events, want 1", n)
				}
			})
		})
	}
}

// TestParkAtLimitSettings guards the option's checks: without a hard
// limit (none, or only warn-only ones) it is a *ConfigError; it is in the
// settings that guard Resume at its value, both ways. Mutations caught:
// the setting left out of the fingerprint (a Resume that changes it
// accepted), the check of hard limits dropped.
func TestParkAtLimitSettings(t *testing.T) {
	for _, l := range []budget.Limits{{}, {Tokens: 200, WarnOnly: budget.Tokens}} {
		_, err := iterate.New((&reader{}).worker(), iterate.WithBudget(l), iterate.WithParkAtLimit()).Run(context.Background(), 0)
		var ce *iterate.ConfigError
		if !errors.As(err, &ce) || ce.Option != "WithParkAtLimit" {
			t.Errorf("limits %+v: %v, want a *ConfigError of WithParkAtLimit", l, err)
		}
	}
	l := budget.Limits{Tokens: 200}
	for _, tc := range []struct {
		name          string
		parkFirst     bool
		parkOnResume  bool
		wantInChanges string
	}{
		{"added", false, true, "at the budget's limit (new) park"},
		{"removed", true, false, "at the budget's limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &checkpoint.Memory{}
			eng := func(park bool) iterate.Engine[int] {
				if park {
					return parking(&reader{}, store, l)
				}
				return iterate.New((&reader{}).worker(), iterate.WithCheckpointer(store), iterate.WithMaxIterations(0), iterate.WithBudget(l))
			}
			if _, err := eng(tc.parkFirst).Run(context.Background(), 0); err != nil && !errors.Is(err, iterate.ErrEscalated) {
				t.Fatal(err)
			}
			_, err := eng(tc.parkOnResume).Resume(context.Background())
			var sc *iterate.SettingsChangedError
			if !errors.As(err, &sc) || !strings.Contains(strings.Join(sc.Changes, "; "), tc.wantInChanges) {
				t.Fatalf("resume: %v, want a *SettingsChangedError naming %q", err, tc.wantInChanges)
			}
		})
	}
}

// TestParkedNonFinite guards "any float a host reports is saved and
// resumed exactly" for the scores of a parked question: a NaN score is
// saved with it and read back as NaN. Mutations caught: the score
// encoded as encoding/json does (the save fails: the run does not park),
// or decoded without the engine's reading of non-finite floats (the
// Resume finds the checkpoint corrupt).
func TestParkedNonFinite(t *testing.T) {
	store := &checkpoint.Memory{}
	l := budget.Limits{Tokens: 200}
	w := &reader{score: math.NaN()}
	res, err := parking(w, store, l).Run(context.Background(), 0)
	if !errors.Is(err, iterate.ErrEscalated) || res.Escalation.Parked == nil {
		t.Fatalf("run: %v, %s", err, res.Status)
	}
	res, err = parking(w, store, l).Resume(context.Background())
	if !errors.Is(err, iterate.ErrEscalated) || res.Escalation.Parked == nil || !math.IsNaN(res.Escalation.Parked.Score) {
		t.Fatalf("resumed: %v, escalation %+v", err, res.Escalation)
	}
	if !strings.Contains(res.Escalation.Question, "score NaN") {
		t.Errorf("question %q", res.Escalation.Question)
	}
}

// TestParkAtWallTime guards parking at the wall-time limit, in fake time:
// a loop whose iterations take 4 minutes under a 10-minute limit parks
// after 2 (the third would exceed it), its question naming the time
// spent; ExtendBudget to 20 minutes continues it to 5 iterations, 20
// minutes, where it parks again: the day the question waited is not
// spent. Mutations caught: the wall limit stopping the loop
// (budget_exhausted), the wall time of the question's wait charged (it
// parks at once after the extension).
func TestParkAtWallTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := &checkpoint.Memory{}
		slow := iterate.Func(func(_ context.Context, n int, _ iterate.Round) (int, error) {
			time.Sleep(4 * time.Minute)
			return n + 1, nil
		})
		eng := func(l budget.Limits) iterate.Engine[int] {
			return iterate.New(slow, iterate.WithCheckpointer(store), iterate.WithMaxIterations(0),
				iterate.WithBudget(l), iterate.WithParkAtLimit())
		}
		l10 := budget.Limits{Wall: 10 * time.Minute}
		res, err := eng(l10).Run(ctx, 0)
		if !errors.Is(err, iterate.ErrEscalated) || res.Iterations != 2 || res.Escalation.Parked == nil || res.Escalation.Parked.Reached != budget.Wall {
			t.Fatalf("run: %v, %s after %d, escalation %+v; want parked at the wall limit after 2", err, res.Status, res.Iterations, res.Escalation)
		}
		if q := res.Escalation.Question; q != "8m0s of 10m0s of wall time spent after 2 iterations; extend the budget?" {
			t.Errorf("question %q", q)
		}
		time.Sleep(24 * time.Hour) // the question waits a day
		res, err = eng(l10).Resume(ctx, iterate.ExtendBudget(budget.Limits{Wall: 20 * time.Minute}, "dana"))
		if !errors.Is(err, iterate.ErrEscalated) || res.Iterations != 5 || res.Usage.Wall != 20*time.Minute {
			t.Fatalf("extended: %v, %s after %d, %v spent; want parked again after 5, 20m0s", err, res.Status, res.Iterations, res.Usage.Wall)
		}
	})
}
