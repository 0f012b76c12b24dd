package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

func TestCapacity(t *testing.T) {
	tests := []struct {
		name      string
		window    budget.ContextWindow
		remaining int
		want      int
	}{
		{"seed003_all_fit_in_200k", budget.ContextWindow{Size: 200000}, 10, 10},
		// 8k per completed + 6k per remaining: 5 done + 5 left = 70,000 <
		// 72,000 (90% of 80,000); 6 + 4 = 72,000 reaches the threshold.
		{"seed003_threshold_90_percent", budget.ContextWindow{Size: 80000}, 10, 5},
		// 4 done + 1 left = 38,000 < 40,000 (50% of 80,000).
		{"seed003_custom_threshold", budget.ContextWindow{Size: 80000, Threshold: 0.5}, 5, 4},
		{"at_least_one_phase", budget.ContextWindow{Size: 10000}, 30, 1},
		{"unknown_window_never_exhausted", budget.ContextWindow{}, 50, 50},
		{"nothing_remaining", budget.ContextWindow{Size: 200000}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := capacity(tt.window, tt.remaining); got != tt.want {
				t.Errorf("capacity = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestShares(t *testing.T) {
	tests := []struct {
		name      string
		budget, n int
		want      []int
	}{
		{"seed003_budget_3_for_3_phases_gives_1_each", 3, 3, []int{1, 1, 1}},
		{"remainder_to_the_first_phases", 5, 3, []int{2, 2, 1}},
		{"more_phases_than_calls", 2, 4, []int{1, 1, 0, 0}},
		{"one_phase_gets_all", 3, 1, []int{3}},
		{"no_budget", 0, 2, []int{0, 0}},
		{"no_phases", 3, 0, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := shares(tt.budget, tt.n)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
			sum := 0
			for _, s := range got {
				sum += s
			}
			if tt.n > 0 && sum != tt.budget {
				t.Errorf("shares sum to %d, want the whole budget %d", sum, tt.budget)
			}
		})
	}
}

// TestCallGate: parallel phases never take more than their shares, and the
// wave never more than its budget.
func TestCallGate(t *testing.T) {
	t.Run("seed003_concurrent_calls_within_shares", func(t *testing.T) {
		wave, err := budget.New(budget.Limits{Calls: 5})
		if err != nil {
			t.Fatal(err)
		}
		var gates []*CallGate
		for _, s := range shares(5, 3) {
			gates = append(gates, newCallGate(wave, s))
		}
		var wg sync.WaitGroup
		for _, g := range gates {
			for range 10 {
				wg.Go(func() {
					if !g.TryExternal() {
						g.Local()
					}
				})
			}
		}
		wg.Wait()
		var got [][2]int
		for _, g := range gates {
			e, l := g.Counts()
			got = append(got, [2]int{e, l})
		}
		if diff := cmp.Diff([][2]int{{2, 8}, {2, 8}, {1, 9}}, got); diff != "" {
			t.Errorf("external, local per gate (-want +got):\n%s", diff)
		}
		if spent := wave.Spent().Calls; spent != 5 {
			t.Errorf("wave spent %d calls, want 5", spent)
		}
	})
	t.Run("zero_share_allows_no_call", func(t *testing.T) {
		wave, _ := budget.New(budget.Limits{}) // 0: no limit, the share still stops
		if newCallGate(wave, 0).TryExternal() {
			t.Error("a zero share allowed an external call")
		}
	})
	t.Run("seed003_reported_calls_over_share", func(t *testing.T) {
		wave, _ := budget.New(budget.Limits{Calls: 3})
		g := newCallGate(wave, 1)
		err := g.account(4, 3, 1)
		var rl *RateLimitError
		if !errors.Is(err, ErrRateLimit) || !errors.As(err, &rl) {
			t.Fatalf("err = %v, want a *RateLimitError", err)
		}
		if diff := cmp.Diff(&RateLimitError{Phase: 4, Used: 3, Share: 1}, rl); diff != "" {
			t.Error(diff)
		}
		if e, l := g.Counts(); e != 3 || l != 1 {
			t.Errorf("counts %d, %d; want the calls that happened: 3, 1", e, l)
		}
		// The wave's budget is overspent now, but a phase within its share
		// is not blamed.
		if err := newCallGate(wave, 1).account(5, 1, 0); err != nil {
			t.Errorf("a call within the share: %v", err)
		}
		if spent := wave.Spent().Calls; spent != 4 {
			t.Errorf("wave spent %d, want the 4 calls made", spent)
		}
	})
	t.Run("wave_budget_spent_stops_calls_within_share", func(t *testing.T) {
		wave, _ := budget.New(budget.Limits{Calls: 2})
		_ = newCallGate(wave, 1).account(1, 2, 0) // over its share: the wave is spent
		g := newCallGate(wave, 1)
		if g.TryExternal() {
			t.Error("an external call was allowed over the wave's spent budget")
		}
		if diff := cmp.Diff(budget.Calls, wave.Exhausted()); diff != "" {
			t.Errorf("wave Exhausted() (-want +got):\n%s", diff)
		}
	})
}

func TestParseReport(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    Report
		wantErr bool
	}{
		{"last_json_line_wins", "progress\n{\"completed\":[9]}\nmore\n{\"completed\":[1,2],\"external_calls\":1,\"local_calls\":2,\"mark_complete\":true}\n",
			Report{Completed: []int{1, 2}, ExternalCalls: 1, LocalCalls: 2, MarkComplete: true}, false},
		{"no_report_means_nothing_done", "I looked but did nothing\n", Report{}, false},
		{"empty_output", "", Report{}, false},
		{"unknown_field", `{"done":[1]}`, Report{}, true},
		{"not_json", "{oops", Report{}, true},
		{"negative_calls", `{"external_calls":-1}`, Report{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseReport(tt.out)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %t", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrProtocol) {
				t.Errorf("err = %v, want ErrProtocol", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSignalString(t *testing.T) {
	// seed003: the orchestrator signal block, field for field.
	s := Signal{Complete: 5, PlanFile: "/p/plans/001-plan.md", TopicPath: "/p", SummaryPath: "/p/summaries/003-iteration-3-summary.md",
		WorkRemaining: []string{"Phase_6", "Phase_7", "Phase_8"}, ContextPercent: "33.4%", CheckpointPath: "/p/.planrunner",
		RequiresContinuation: true}
	want := `IMPLEMENTATION_COMPLETE: 5
plan_file: /p/plans/001-plan.md
topic_path: /p
summary_path: /p/summaries/003-iteration-3-summary.md
work_remaining: Phase_6 Phase_7 Phase_8
context_exhausted: false
context_usage_percent: 33.4%
checkpoint_path: /p/.planrunner
requires_continuation: true
stuck_detected: false
`
	if diff := cmp.Diff(want, s.String()); diff != "" {
		t.Errorf("signal (-want +got):\n%s", diff)
	}
	if got := (Signal{}).String(); !strings.Contains(got, "work_remaining: 0\n") {
		t.Errorf("no work remaining should read 0:\n%s", got)
	}
}

// runInProcess runs the program in this process, so that the race detector
// watches the parallel phases.
func runInProcess(t *testing.T, ctx context.Context, path string, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(ctx, append(append([]string{"--quiet"}, simulated(args)...), path), &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.String())
	}
	return stdout.String(), code
}

func TestInProcess(t *testing.T) {
	t.Run("seed003_parallel_waves_with_shared_budget", func(t *testing.T) {
		path := fixture(t, "rate_limit.md")
		out, code := runInProcess(t, context.Background(), path, "--parallel", "3", "--sim-tasks-per-call", "2", "--sim-skip-markers")
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, out)
		}
		s, err := os.ReadFile(filepath.Join(filepath.Dir(path), "summaries", "001-iteration-1-summary.md"))
		if err != nil {
			t.Fatal(err)
		}
		// Wave 1 spends its budget; wave 2 is blocked (its dependencies
		// are not complete yet) and makes no call.
		var got []string
		for _, m := range rateRe.FindAllStringSubmatch(string(s), -1) {
			got = append(got, m[1]+" of "+m[2])
		}
		if diff := cmp.Diff([]string{"3 of 3", "0 of 3"}, got); diff != "" {
			t.Errorf("external calls per wave (-want +got):\n%s", diff)
		}
		// Iteration 1 ticks 2 of 3 tasks in wave 1 (wave 2 is blocked), 2
		// finishes wave 1 and ticks wave 2, 3 finishes wave 2.
		if !strings.Contains(out, "Stopped: converged after 3 iteration(s)") {
			t.Errorf("stdout:\n%s", out)
		}
	})

	// Conclude records stuck_detected in the state before the engine saves
	// the final checkpoint, not only in the summary file.
	t.Run("seed003_stuck_recorded_in_final_checkpoint", func(t *testing.T) {
		path := fixture(t, "stuck.md")
		if out, code := runInProcess(t, context.Background(), path, "--sim-fail", "Phase 2"); code != exitStuck {
			t.Fatalf("exit %d\n%s", code, out)
		}
		c, err := checkpoint.NewDir(filepath.Join(filepath.Dir(path), ".planrunner")).Load(context.Background(), "stuck")
		if err != nil {
			t.Fatal(err)
		}
		var s State
		if err := json.Unmarshal(c.State, &s); err != nil {
			t.Fatal(err)
		}
		var got []bool
		for _, rec := range s.Iterations {
			got = append(got, rec.Stuck)
		}
		if diff := cmp.Diff([]bool{false, false, true}, got); diff != "" || c.Status != string(iterate.Stuck) {
			t.Errorf("checkpoint status %s, stuck per iteration (-want +got):\n%s", c.Status, diff)
		}
	})

	// A context that ended before the loop started: the engine returns an
	// Interrupted result with nothing saved, so the program says so (exit
	// 130) and does not offer a resume it has no checkpoint for.
	t.Run("cancelled_before_start_saves_nothing", func(t *testing.T) {
		path := fixture(t, "dependencies.md")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out, code := runInProcess(t, ctx, path)
		if code != exitInterrupted || !strings.Contains(out, "Interrupted before the first iteration: nothing done, nothing saved.") ||
			strings.Contains(out, "State saved") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		// The output directories are checked (made) before the first
		// iteration, but nothing is written in them.
		if entries, err := os.ReadDir(filepath.Join(filepath.Dir(path), "summaries")); len(entries) > 0 {
			t.Errorf("summaries written: %v %v", entries, err)
		}
		out, code = runInProcess(t, context.Background(), path, "--resume")
		if code != exitError {
			t.Errorf("resume after a run that never started: exit %d, want %d (no checkpoint)\n%s", code, exitError, out)
		}
	})

	t.Run("cancelled_before_resume", func(t *testing.T) {
		path := fixture(t, "dependencies.md")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		out, code := runInProcess(t, ctx, path, "--resume")
		if code != exitInterrupted || !strings.Contains(out, "Interrupted before resuming: nothing done; run again with --resume to continue.") {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})

	t.Run("interrupt_mid_wave_and_resume", func(t *testing.T) {
		path := fixture(t, "dependencies.md")
		fifo := filepath.Join(filepath.Dir(path), "hang.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("no fifo: %v", err)
		}
		f, err := os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		t.Setenv("HANG_PHASE", "2")
		t.Setenv("HANG_FIFO", fifo)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type ran struct {
			out  string
			code int
		}
		done := make(chan ran, 1)
		impl := script(t, "impl_ok.sh")
		go func() {
			out, code := runInProcess(t, ctx, path, "--implementer-cmd", impl)
			done <- ran{out, code}
		}()
		hanging := make(chan struct{})
		go func() {
			bufio.NewReader(f).ReadString('\n')
			close(hanging)
		}()
		select {
		case <-hanging:
		case r := <-done:
			f.Write([]byte("\n"))
			t.Fatalf("run ended before hanging: exit %d\n%s", r.code, r.out)
		}
		cancel() // as SIGINT does
		r := <-done
		if r.code != exitInterrupted || !strings.Contains(r.out, "Interrupted after 0 iteration(s).") {
			t.Fatalf("exit %d\n%s", r.code, r.out)
		}
		// Wave 1 (Phases 1 and 3) finished before the interrupt; the plan
		// file keeps that, and the resumed iteration 1 does the rest.
		t.Setenv("HANG_PHASE", "none")
		out, code := runInProcess(t, context.Background(), path, "--resume", "--implementer-cmd", impl)
		if code != exitOK || !strings.Contains(out, "Iteration 1/5: 2 of 2 remaining phase(s) in 2 wave(s)") {
			t.Errorf("resume: exit %d\n%s", code, out)
		}
	})
}

func TestSessionName(t *testing.T) {
	for in, want := range map[string]string{
		"/x/001-lean-plan.md": "001-lean-plan",
		"/x/my plan (v2).md":  "my-plan--v2-",
		"/x/.hidden.md":       "hidden",
		"/x/ü.md":             "--",
	} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			if got := sessionName(in); got != want {
				t.Errorf("sessionName(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

// TestRunnerSettings checks what the runner contributes, as a strategy, to
// the engine's resume fingerprint: the values its plans depend on, not its
// run-time fields (the first-plan hook is set on a new run only, so a
// resume would otherwise be refused as "checkpointed under other
// settings").
func TestRunnerSettings(t *testing.T) {
	base := func() *runner {
		return &runner{plan: "/p/plan.md", window: budget.ContextWindow{Size: 200000, Threshold: 0.9}, rateBudget: 3}
	}
	want := "planrunner mode=plan context-window=200000 context-threshold=0.9 rate-limit-budget=3"
	if diff := cmp.Diff(want, base().Settings()); diff != "" {
		t.Errorf("Settings (-want +got):\n%s", diff)
	}
	fresh := base()
	fresh.onFirstPlan = func() error { return nil }
	fresh.out = &strings.Builder{}
	fresh.impl = &Sim{}
	if fresh.Settings() != base().Settings() {
		t.Errorf("run-time fields change the settings: %q vs %q", fresh.Settings(), base().Settings())
	}
	for name, change := range map[string]func(*runner){
		"file mode":         func(r *runner) { r.fileMode = true },
		"context window":    func(r *runner) { r.window.Size = 80000 },
		"context threshold": func(r *runner) { r.window.Threshold = 0.5 },
		"rate-limit budget": func(r *runner) { r.rateBudget = 2 },
	} {
		r := base()
		change(r)
		if r.Settings() == base().Settings() {
			t.Errorf("changing the %s leaves the settings %q", name, r.Settings())
		}
	}
}
