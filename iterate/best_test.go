package iterate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// peakScores are the scores of the states of a six-iteration loop, by the
// number of iterations completed: they peak at 3 and then regress.
var peakScores = []float64{0.1, 0.3, 0.5, 0.9, 0.6, 0.4, 0.2}

// draft is the state of the peaking loop: its round, and a text that
// grows, so that states differ in more than a number.
type draft struct {
	Round int    `json:"round"`
	Text  string `json:"text"`
}

// peakWorker is a loop of six rounds whose score peaks at round 3. Do
// calls hook, if set, at the start of each round.
func peakWorker(hook func(ctx context.Context, round int) error) *iterate.FuncWorker[draft] {
	w := iterate.Func(func(ctx context.Context, d draft, r iterate.Round) (draft, error) {
		if hook != nil {
			if err := hook(ctx, r.Iteration); err != nil {
				return d, err
			}
		}
		r.Charge(budget.Usage{Tokens: int64(100 * r.Iteration), Calls: 1})
		return draft{Round: d.Round + 1, Text: d.Text + fmt.Sprintf("[draft %d]", d.Round+1)}, nil
	})
	w.AssessFunc = func(_ context.Context, d draft) (gap.Assessment, error) {
		return gap.Assessment{Score: peakScores[min(d.Round, len(peakScores)-1)]}, nil
	}
	return w
}

func peakOptions(store iterate.Checkpointer, extra ...iterate.Option) []iterate.Option {
	opts := []iterate.Option{iterate.WithMaxIterations(6), iterate.WithKeepBest(), iterate.WithSession("peak")}
	if store != nil {
		opts = append(opts, iterate.WithCheckpointer(store))
	}
	return append(opts, extra...)
}

// wantPeak is the best of the peaking loop.
var wantPeak = &iterate.Best[draft]{State: draft{Round: 3, Text: "[draft 1][draft 2][draft 3]"}, Iteration: 3, Score: 0.9}

// TestKeepBestPeak: a loop whose score peaks at iteration 3 of 6 ends
// with its last state and returns iteration 3's as the best, with or
// without a store; without the option Result.Best is nil.
func TestKeepBestPeak(t *testing.T) {
	for _, store := range []iterate.Checkpointer{nil, new(checkpoint.Memory), checkpoint.NewDir(t.TempDir())} {
		t.Run(fmt.Sprintf("%T", store), func(t *testing.T) {
			res, err := iterate.New(peakWorker(nil), peakOptions(store)...).Run(context.Background(), draft{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != iterate.MaxIterations || res.State.Round != 6 {
				t.Fatalf("%s with round %d, want max_iterations with round 6", res.Status, res.State.Round)
			}
			if diff := cmp.Diff(wantPeak, res.Best); diff != "" {
				t.Errorf("Best (-want +got):\n%s", diff)
			}
			if res.History.BestIteration != res.Best.Iteration || res.History.BestScore != res.Best.Score {
				t.Errorf("history's best %d (%v), Best %d (%v)", res.History.BestIteration, res.History.BestScore, res.Best.Iteration, res.Best.Score)
			}
		})
	}
	res, err := iterate.New(peakWorker(nil), iterate.WithMaxIterations(6)).Run(context.Background(), draft{})
	if err != nil || res.Best != nil {
		t.Errorf("without WithKeepBest: Best %v, %v; want nil", res.Best, err)
	}
}

// TestKeepBestInterruptedAndResumed: interrupted in iteration 5, the
// result already has iteration 3's state as best; resumed by a new engine,
// the loop ends with the same best, which the saved session names, in a
// generation its retention kept.
func TestKeepBestInterruptedAndResumed(t *testing.T) {
	store := &checkpoint.Memory{KeepBest: true}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := func(ctx context.Context, round int) error {
		if round == 5 {
			cancel()
			return ctx.Err()
		}
		return nil
	}
	res, err := iterate.New(peakWorker(hook), peakOptions(store)...).Run(ctx, draft{})
	if !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatalf("Run: %v, want interrupted", err)
	}
	if res.Iterations != 4 {
		t.Fatalf("interrupted after %d iterations, want 4", res.Iterations)
	}
	if diff := cmp.Diff(wantPeak, res.Best); diff != "" {
		t.Errorf("Best of the interrupted run (-want +got):\n%s", diff)
	}
	res, err = iterate.New(peakWorker(nil), peakOptions(store)...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Round != 6 {
		t.Errorf("resumed to round %d, want 6", res.State.Round)
	}
	if diff := cmp.Diff(wantPeak, res.Best); diff != "" {
		t.Errorf("Best after the resume (-want +got):\n%s", diff)
	}
	// The saved result, read again, carries the same best.
	res, err = iterate.New(peakWorker(nil), peakOptions(store)...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantPeak, res.Best); diff != "" {
		t.Errorf("Best of the saved result (-want +got):\n%s", diff)
	}
	checkBestGeneration(t, store, "peak", wantPeak)
}

// checkBestGeneration checks that the latest checkpoint of session names,
// as its best generation, a kept generation whose state is want's.
func checkBestGeneration(t *testing.T, store iterate.Checkpointer, session string, want *iterate.Best[draft]) {
	t.Helper()
	latest, err := store.Load(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	if latest.BestGeneration == 0 {
		t.Fatalf("latest checkpoint (generation %d) names no best generation", latest.BestGeneration)
	}
	g, ok := store.(iterate.GenerationLoader)
	if !ok {
		return
	}
	c, err := g.LoadGeneration(context.Background(), session, latest.BestGeneration)
	if err != nil {
		t.Fatalf("loading the best generation %d: %v", latest.BestGeneration, err)
	}
	var s draft
	if err := iterate.JSON.Unmarshal(c.State, &s); err != nil {
		t.Fatal(err)
	}
	if c.Iteration != want.Iteration || s != want.State {
		t.Errorf("best generation %d: iteration %d state %+v, want iteration %d state %+v", c.Generation, c.Iteration, s, want.Iteration, want.State)
	}
}

// TestKeepBestStatuses: what best means at each kind of stop.
func TestKeepBestStatuses(t *testing.T) {
	// Converged at once: the initial state is the best, iteration 0.
	w := iterate.Func(func(_ context.Context, d draft, _ iterate.Round) (draft, error) { return d, nil })
	w.AssessFunc = func(context.Context, draft) (gap.Assessment, error) {
		return gap.Assessment{Score: 0.5, Complete: true}, nil
	}
	res, err := iterate.New(w, iterate.WithKeepBest()).Run(context.Background(), draft{Text: "first"})
	if err != nil || res.Status != iterate.Converged || res.Best == nil || res.Best.Iteration != 0 || res.Best.State.Text != "first" {
		t.Errorf("converged at once: %s, Best %+v, %v", res.Status, res.Best, err)
	}
	// Interrupted before the first assessment: no best.
	ctx, cancel := context.WithCancel(context.Background())
	w2 := peakWorker(nil)
	w2.AssessFunc = func(context.Context, draft) (gap.Assessment, error) {
		cancel()
		return gap.Assessment{}, context.Canceled
	}
	res, err = iterate.New(w2, iterate.WithKeepBest()).Run(ctx, draft{})
	if !errors.Is(err, iterate.ErrInterrupted) || res.Best != nil {
		t.Errorf("interrupted before assessing: Best %+v, %v", res.Best, err)
	}
	// Equal scores: the earliest; scores that are not numbers: never.
	scores := map[int]float64{0: 0.2, 1: 0.7, 2: 0.7, 3: nan(), 4: 0.1}
	w3 := iterate.Func(func(_ context.Context, d draft, _ iterate.Round) (draft, error) {
		return draft{Round: d.Round + 1}, nil
	})
	by := iterate.ScorerFunc(func(a *gap.Assessment) float64 { return scores[len(a.WorkRemaining)] })
	w3.AssessFunc = func(_ context.Context, d draft) (gap.Assessment, error) {
		return gap.Assessment{WorkRemaining: make([]string, d.Round)}, nil
	}
	res, err = iterate.New(w3, iterate.WithMaxIterations(4), iterate.WithKeepBest(by)).Run(context.Background(), draft{})
	if err != nil || res.Best == nil || res.Best.Iteration != 1 || res.Best.Score != 0.7 {
		t.Errorf("ties and NaN: Best %+v, %v; want iteration 1", res.Best, err)
	}
}

func nan() float64 { var z float64; return z / z }

// TestKeepBestOptions: invalid uses of WithKeepBest are configuration
// errors; the option and its scorer are settings a resume compares, and a
// loop without it keeps the fingerprint it had before the option existed.
func TestKeepBestOptions(t *testing.T) {
	for _, opt := range []iterate.Option{iterate.WithKeepBest(nil), iterate.WithKeepBest(iterate.ByMetric("a"), iterate.ByMetric("b"))} {
		if _, err := iterate.New(peakWorker(nil), opt).Run(context.Background(), draft{}); !errors.Is(err, iterate.ErrInvalidOption) {
			t.Errorf("Run: %v, want ErrInvalidOption", err)
		}
	}
	store := new(checkpoint.Memory)
	run := func(opts ...iterate.Option) *checkpoint.Checkpoint {
		t.Helper()
		opts = append(opts, iterate.WithCheckpointer(store), iterate.WithSession("opts"), iterate.WithMaxIterations(1))
		if _, err := iterate.New(peakWorker(nil), opts...).Run(context.Background(), draft{}); err != nil {
			t.Fatal(err)
		}
		c, err := store.Load(context.Background(), "opts")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	off := run()
	score := run(iterate.WithKeepBest())
	metric := run(iterate.WithKeepBest(iterate.ByMetric("coverage")))
	if off.Fingerprint == score.Fingerprint || score.Fingerprint == metric.Fingerprint || off.Fingerprint == metric.Fingerprint {
		t.Errorf("fingerprints off %s, score %s, metric %s: want all different", off.Fingerprint, score.Fingerprint, metric.Fingerprint)
	}
	rep, err := iterate.Inspect(off)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Settings {
		if s[0] == "keep best" {
			t.Errorf("a loop without WithKeepBest has the setting %q", s)
		}
	}
	// metric is the latest: resuming it under another scorer names it.
	_, err = iterate.New(peakWorker(nil), iterate.WithCheckpointer(store), iterate.WithSession("opts"), iterate.WithMaxIterations(1),
		iterate.WithKeepBest()).Resume(context.Background())
	var sc *iterate.SettingsChangedError
	if !errors.As(err, &sc) || !strings.Contains(strings.Join(sc.Changes, ";"), "keep best metric coverage → score") {
		t.Errorf("resume under another scorer: %v", err)
	}
}

// TestKeepBestAfterFallback: resumed after its newest generation was
// damaged (the store falls back to the one before and quarantines it), a
// loop names as its best generation the one the store really wrote.
func TestKeepBestAfterFallback(t *testing.T) {
	dir := t.TempDir()
	store := checkpoint.NewDir(dir, checkpoint.KeepAll())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := func(ctx context.Context, round int) error {
		if round == 3 { // before the best is found
			cancel()
			return ctx.Err()
		}
		return nil
	}
	if _, err := iterate.New(peakWorker(hook), peakOptions(store)...).Run(ctx, draft{}); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatalf("Run: %v", err)
	}
	latest, err := store.Load(context.Background(), "peak")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("peak.%020d.ckpt", latest.Generation))
	if err := os.WriteFile(path, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := iterate.New(peakWorker(nil), peakOptions(checkpoint.NewDir(dir, checkpoint.KeepAll()))...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantPeak, res.Best); diff != "" {
		t.Errorf("Best (-want +got):\n%s", diff)
	}
	checkBestGeneration(t, checkpoint.NewDir(dir), "peak", wantPeak)
}

// TestKeepBestAfterRemove: a session removed and started again is
// numbered by the store above its earlier generations (a Memory keeps its
// counters), and the best's generation names the generation written.
func TestKeepBestAfterRemove(t *testing.T) {
	for _, store := range []interface {
		iterate.Checkpointer
		iterate.Remover
	}{&checkpoint.Memory{KeepBest: true}, checkpoint.NewDir(t.TempDir(), checkpoint.KeepBest())} {
		t.Run(fmt.Sprintf("%T", store), func(t *testing.T) {
			ctx := context.Background()
			if _, err := iterate.New(peakWorker(nil), peakOptions(store)...).Run(ctx, draft{}); err != nil {
				t.Fatal(err)
			}
			if err := store.Remove(ctx, "peak"); err != nil {
				t.Fatal(err)
			}
			res, err := iterate.New(peakWorker(nil), peakOptions(store)...).Run(ctx, draft{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantPeak, res.Best); diff != "" {
				t.Errorf("Best (-want +got):\n%s", diff)
			}
			checkBestGeneration(t, store, "peak", wantPeak)
		})
	}
}
