package iterate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// cli simulates seed 004's AI CLI: each call is one iteration; it fails on
// the listed 1-indexed iterations and takes the given time.
type cli struct {
	failOn map[int]bool
	took   time.Duration
}

func (c cli) do(ctx context.Context, n int, r iterate.Round) (int, error) {
	if c.took > 0 {
		select {
		case <-time.After(c.took):
		case <-ctx.Done():
			return n, ctx.Err()
		}
	}
	if c.failOn[r.Iteration] {
		return n, fmt.Errorf("AI CLI failed (exit 1)")
	}
	return n + 1, nil
}

func failOn(its ...int) map[int]bool {
	m := map[int]bool{}
	for _, i := range its {
		m[i] = true
	}
	return m
}

// TestSeed004EdgeCases covers the engine rows of seed 004's edge-case table.
func TestSeed004EdgeCases(t *testing.T) {
	tests := []struct {
		name       string
		max        int
		fail       map[int]bool
		wantStatus iterate.Status
		wantIters  int
		wantState  int // successful AI CLI runs
		wantErr    error
	}{
		{name: "max_iterations_1_single_iteration", max: 1, wantStatus: iterate.MaxIterations, wantIters: 1, wantState: 1},
		{name: "max_iterations_3_happy_path", max: 3, wantStatus: iterate.MaxIterations, wantIters: 3, wantState: 3},
		{name: "ai_cli_exits_non_zero_continues", max: 3, fail: failOn(2), wantStatus: iterate.MaxIterations, wantIters: 3, wantState: 2},
		{name: "three_consecutive_failures_abort", max: 10, fail: failOn(4, 5, 6), wantStatus: iterate.Aborted, wantIters: 6, wantState: 3, wantErr: iterate.ErrAborted},
		{name: "success_after_two_failures_resets", max: 6, fail: failOn(2, 3, 5, 6), wantStatus: iterate.MaxIterations, wantIters: 6, wantState: 2},
		{name: "max_iterations_0_unlimited_until_failure_threshold", max: 0, fail: failOn(41, 42, 43), wantStatus: iterate.Aborted, wantIters: 43, wantState: 40, wantErr: iterate.ErrAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := iterate.Func(cli{failOn: tt.fail}.do)
			res, err := iterate.New(w, iterate.WithMaxIterations(tt.max)).Run(context.Background(), 0)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			got := []any{res.Status, res.Iterations, res.State}
			want := []any{tt.wantStatus, tt.wantIters, tt.wantState}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status, iterations, state (-want +got):\n%s\nreason: %s", diff, res.Reason)
			}
			if tt.wantStatus == iterate.Aborted && !strings.Contains(res.Reason, "3 consecutive failures") {
				t.Errorf("reason %q does not name the failures", res.Reason)
			}
			var stop *iterate.StopError
			if tt.wantErr != nil && (!errors.As(err, &stop) || stop.Err == nil) {
				t.Errorf("abort error %v does not carry the last failure", err)
			}
		})
	}
}

// TestSeed004ResumeAfterFiveOfTen: interrupted during iteration 6, resume
// restores the counter to 5 and continues with 6.
func TestSeed004ResumeAfterFiveOfTen(t *testing.T) {
	store := &checkpoint.Memory{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []int
	interrupted := false
	do := func(ctx context.Context, n int, r iterate.Round) (int, error) {
		seen = append(seen, r.Iteration)
		if r.Iteration == 6 && !interrupted {
			interrupted = true
			cancel() // Ctrl+C during iteration 6
			<-ctx.Done()
			return n, ctx.Err()
		}
		return n + 1, nil
	}
	eng := iterate.New(iterate.Func(do), iterate.WithMaxIterations(10), iterate.WithCheckpointer(store), iterate.WithSession("build"))
	res, err := eng.Run(ctx, 0)
	if !errors.Is(err, iterate.ErrInterrupted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want interrupted wrapping context.Canceled", err)
	}
	if res.Status != iterate.Interrupted || res.Iterations != 5 {
		t.Fatalf("got %s after %d iterations, want interrupted after 5", res.Status, res.Iterations)
	}
	saved, err := store.Load(context.Background(), "build")
	if err != nil || saved.Status != string(iterate.Interrupted) || saved.Iteration != 5 {
		t.Fatalf("saved checkpoint %+v, %v; want interrupted at 5", saved, err)
	}

	res, err = eng.Resume(context.Background())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if res.Status != iterate.MaxIterations || res.Iterations != 10 || res.State != 10 {
		t.Errorf("resumed run ended %s after %d iterations with state %d, want max_iterations, 10, 10", res.Status, res.Iterations, res.State)
	}
	want := []int{1, 2, 3, 4, 5, 6, 6, 7, 8, 9, 10}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("iterations run (-want +got):\n%s", diff)
	}
}

// TestSeed004ConcurrentRunRefused: a session held by a running loop refuses a
// second start.
func TestSeed004ConcurrentRunRefused(t *testing.T) {
	store := checkpoint.NewDir(t.TempDir())
	started := make(chan struct{})
	release := make(chan struct{})
	do := func(ctx context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration == 1 {
			close(started)
			<-release
		}
		return n + 1, nil
	}
	opts := []iterate.Option{iterate.WithMaxIterations(2), iterate.WithCheckpointer(store), iterate.WithSession("build")}
	done := make(chan error, 1)
	go func() {
		_, err := iterate.New(iterate.Func(do), opts...).Run(context.Background(), 0)
		done <- err
	}()
	<-started
	_, err := iterate.New(iterate.Func(do), opts...).Run(context.Background(), 0)
	var locked *checkpoint.LockedError
	if !errors.Is(err, checkpoint.ErrLocked) || !errors.As(err, &locked) {
		t.Errorf("second run: err = %v, want checkpoint.ErrLocked", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first run: %v", err)
	}
	// Released: a new run may start.
	if _, err := iterate.New(iterate.Func(do), opts...).Run(context.Background(), 0); err != nil {
		t.Errorf("run after release: %v", err)
	}
}

// TestSeed004CorruptStateStartsFresh: a corrupted state file is warned about
// and a fresh start made by Run; Resume reports it with a typed error.
func TestSeed004CorruptStateStartsFresh(t *testing.T) {
	dir := t.TempDir()
	store := checkpoint.NewDir(dir)
	inc := iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) { return n + 1, nil })
	opts := []iterate.Option{iterate.WithMaxIterations(2), iterate.WithCheckpointer(store), iterate.WithSession("build")}
	if _, err := iterate.New(inc, opts...).Run(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	corrupt := func() {
		files, _ := filepath.Glob(filepath.Join(dir, "build.*.ckpt"))
		if len(files) == 0 {
			t.Fatal("no checkpoint files")
		}
		for _, f := range files {
			if err := os.WriteFile(f, []byte("garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	corrupt()
	rec := &iteratetest.Recorder{}
	res, err := iterate.New(inc, append(opts, iterate.WithObserver(rec.Observe))...).Run(context.Background(), 0)
	if err != nil || res.Iterations != 2 {
		t.Fatalf("fresh run: %v, %+v", err, res)
	}
	if ws := rec.Warnings(); len(ws) == 0 || !strings.Contains(ws[0], "starting fresh") {
		t.Errorf("warnings %q; want one about the corrupt checkpoint", ws)
	}
	quarantined, _ := filepath.Glob(filepath.Join(dir, "*.corrupt"))
	if len(quarantined) == 0 {
		t.Errorf("the corrupt checkpoints were not kept (quarantined)")
	}

	corrupt()
	if _, err := iterate.New(inc, opts...).Resume(context.Background()); !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Errorf("Resume of corrupt session: err = %v, want checkpoint.ErrCorrupt", err)
	}
}

var errDiskFull = errors.New("no space left on device")

// diskFull is a store whose every save fails, like a full disk.
func diskFull() *checkpointtest.Faulty {
	return &checkpointtest.Faulty{Store: &checkpoint.Memory{},
		FailSave: func(int, *checkpoint.Checkpoint) error { return errDiskFull }}
}

// TestSeed004DiskFullBestEffort: persistence failures are warned about and
// the loop goes on; with strict checkpoints the run fails.
func TestSeed004DiskFullBestEffort(t *testing.T) {
	inc := iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) { return n + 1, nil })
	rec := &iteratetest.Recorder{}
	res, err := iterate.New(inc, iterate.WithMaxIterations(3), iterate.WithCheckpointer(diskFull()),
		iterate.WithObserver(rec.Observe)).Run(context.Background(), 0)
	if err != nil || res.Status != iterate.MaxIterations || res.Iterations != 3 {
		t.Fatalf("best effort: %v, %s after %d", err, res.Status, res.Iterations)
	}
	if n := len(rec.Warnings()); n != 4 { // 3 iterations + the stop
		t.Errorf("got %d warnings, want 4: %q", n, rec.Warnings())
	}

	res, err = iterate.New(inc, iterate.WithMaxIterations(3), iterate.WithCheckpointer(diskFull(), iterate.Strict)).Run(context.Background(), 0)
	if !errors.Is(err, iterate.ErrFailed) || !errors.Is(err, errDiskFull) || res.Status != iterate.Failed || res.Iterations != 1 {
		t.Errorf("strict: err = %v, status %s after %d; want failed after 1 wrapping the save error", err, res.Status, res.Iterations)
	}
}

// TestSeed004TokenBudgetWarns: a prompt over its token budget (a warn-only
// limit) is warned about and the loop goes on.
func TestSeed004TokenBudgetWarns(t *testing.T) {
	w := &iterate.FuncWorker[int]{Do: func(ctx context.Context, n int, r iterate.Round) (int, error) { return n + 1, nil }}
	rec := &iteratetest.Recorder{}
	res, err := iterate.New(w, iterate.WithMaxIterations(2),
		iterate.WithBudget(budget.Limits{Tokens: 100_000, WarnOnly: budget.Tokens}),
		iterate.WithEstimate(budget.Usage{Iterations: 1, Tokens: 120_000}),
		iterate.WithObserver(rec.Observe)).Run(context.Background(), 0)
	if err != nil || res.Iterations != 2 {
		t.Fatalf("%v after %d iterations", err, res.Iterations)
	}
	if ws := rec.Warnings(); len(ws) != 2 || !strings.Contains(ws[0], "tokens") {
		t.Errorf("warnings = %q, want one token warning per iteration", ws)
	}
}

// TestSeed004Progress checks the progress lines and timing of seed 004's
// examples, with fake time.
func TestSeed004Progress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		w := iterate.Func(cli{took: 45200 * time.Millisecond, failOn: failOn(2)}.do)
		_, err := iterate.New(w, iterate.WithMaxIterations(3), iterate.WithSession("build"),
			iterate.WithObserver(iterate.Progress(&out))).Run(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		want := `[00:00:00] Starting session: build (max 3 iterations)
[00:00:00] Iteration 1/3 starting...
[00:00:45] Iteration 1/3 completed in 45.2s
[00:00:45] Iteration 2/3 starting...
[00:01:30] WARNING: AI CLI failed (exit 1), consecutive failures: 1/3
[00:01:30] Iteration 2/3 completed in 45.2s
[00:01:30] Iteration 3/3 starting...
[00:02:15] Iteration 3/3 completed in 45.2s
[00:02:15] Reached max iterations: 3 (total: 2m16s)
`
		if diff := cmp.Diff(want, out.String()); diff != "" {
			t.Errorf("progress (-want +got):\n%s", diff)
		}
	})
}

// TestSeed004ProgressAbortAndResume: seed 004's examples 2 (consecutive
// failure abort) and 3 (interrupt and resume), as Progress prints them.
func TestSeed004ProgressAbortAndResume(t *testing.T) {
	t.Run("example2_consecutive_failure_abort", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var out bytes.Buffer
			w := iterate.Func(cli{took: 10 * time.Second, failOn: failOn(4, 5, 6)}.do)
			_, err := iterate.New(w, iterate.WithMaxIterations(10), iterate.WithSession("build"),
				iterate.WithObserver(iterate.Progress(&out, iterate.ProgressNoun("procedure")))).Run(context.Background(), 0)
			if !errors.Is(err, iterate.ErrAborted) {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			want := []string{
				"[00:00:00] Starting procedure: build (max 10 iterations)",
				"[00:00:50] WARNING: AI CLI failed (exit 1), consecutive failures: 2/3",
				"[00:00:50] Iteration 5/10 completed in 10.0s",
				"[00:00:50] Iteration 6/10 starting...",
				"[00:01:00] WARNING: AI CLI failed (exit 1), consecutive failures: 3/3",
				"[00:01:00] ERROR: Aborting after 3 consecutive failures (6 iterations completed, total: 1m0s)",
			}
			got := []string{lines[0]}
			got = append(got, lines[len(lines)-5:]...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("progress (-want +got):\n%s\nall:\n%s", diff, out.String())
			}
		})
	})
	t.Run("example3_resume_after_interruption", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var out bytes.Buffer
			store := &checkpoint.Memory{}
			ctx, cancel := context.WithCancel(context.Background())
			interrupted := false
			do := func(ctx context.Context, n int, r iterate.Round) (int, error) {
				time.Sleep(54 * time.Second)
				if r.Iteration == 6 && !interrupted {
					interrupted = true
					cancel()
					return n, ctx.Err()
				}
				return n + 1, nil
			}
			progress := iterate.Progress(&out, iterate.ProgressNoun("procedure"), iterate.ProgressResumeHint("agentloop resume build"))
			opts := []iterate.Option{iterate.WithMaxIterations(10), iterate.WithSession("build"),
				iterate.WithCheckpointer(store), iterate.WithObserver(progress)}
			if _, err := iterate.New(iterate.Func(do), opts...).Run(ctx, 0); !errors.Is(err, iterate.ErrInterrupted) {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "Interrupted. State saved. Resume with: agentloop resume build\n") {
				t.Errorf("no resume hint:\n%s", out.String())
			}
			out.Reset()
			if _, err := iterate.New(iterate.Func(do), opts...).Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(out.String(), "\n")
			want := []string{
				"[00:05:24] Resuming procedure: build from iteration 5 (max 10)",
				"[00:05:24] Previous session: 5 iterations completed in 4m30s",
				"[00:05:24] Iteration 6/10 starting...",
			}
			if diff := cmp.Diff(want, lines[:3]); diff != "" {
				t.Errorf("resume lines (-want +got):\n%s", diff)
			}
		})
	})
}

// TestRefuseResumable: with RefuseResumable, Run does not start over a
// session that can be resumed.
func TestRefuseResumable(t *testing.T) {
	store := &checkpoint.Memory{}
	ctx, cancel := context.WithCancel(context.Background())
	do := func(ctx context.Context, n int, r iterate.Round) (int, error) {
		cancel()
		return n, ctx.Err()
	}
	opts := []iterate.Option{iterate.WithCheckpointer(store, iterate.RefuseResumable)}
	if _, err := iterate.New(iterate.Func(do), opts...).Run(ctx, 0); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
	_, err := iterate.New(iterate.Func(do), opts...).Run(context.Background(), 0)
	var re *iterate.ResumableError
	if !errors.Is(err, iterate.ErrResumable) || !errors.As(err, &re) || re.Checkpoint.Status != string(iterate.Interrupted) {
		t.Errorf("err = %v, want a *ResumableError", err)
	}
}

// TestRoundReports: a Func worker reports usage through its Round and
// warnings through iterate.Warn.
func TestRoundReports(t *testing.T) {
	rec := &iteratetest.Recorder{}
	do := func(ctx context.Context, n int, r iterate.Round) (int, error) {
		r.Charge(budget.Usage{Tokens: 4230, Cost: 0.01})
		iterate.Warn(ctx, "Prompt exceeds token budget: 4,230 > 4,000")
		return n + 1, nil
	}
	res, err := iterate.New(iterate.Func(do), iterate.WithMaxIterations(2), iterate.WithObserver(rec.Observe)).Run(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.Tokens != 8460 {
		t.Errorf("tokens %d, want 8460", res.Usage.Tokens)
	}
	if ws := rec.Warnings(); len(ws) != 2 || ws[0] != "Prompt exceeds token budget: 4,230 > 4,000" {
		t.Errorf("warnings %q", ws)
	}
	// Reported at once: the warning precedes the end of its iteration.
	kinds := rec.Kinds(false)
	if i := slices.Index(kinds, "Warned"); i < 0 || kinds[i+1] != "IterationEnded" {
		t.Errorf("warning not reported during the iteration: %v", kinds)
	}
}
