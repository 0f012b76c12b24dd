package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/examples/internal/e2etest"
	"github.com/refine-go/refine/iterate"
)

// result is one run of the binary.
type result struct {
	dir            string
	plan           string // the plan's path in dir
	stdout, stderr string
	code           int
}

// fixture copies testdata/name to a fresh directory and returns its path
// there: the runner edits the plan, so tests never run on testdata itself.
func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// script returns the command that runs a stand-in implementer of testdata
// (through bash, so that it works without the executable bit).
func script(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return "bash '" + p + "'"
}

// runOn runs the binary on the plan at path (quietly, without progress
// lines) with the stand-ins' call log in its directory.
func runOn(t *testing.T, path string, args ...string) *result {
	t.Helper()
	return runCmd(t, path, nil, args...)
}

// runCmd runs the binary on the plan at path with args and the extra
// environment env.
func runCmd(t *testing.T, path string, env []string, args ...string) *result {
	t.Helper()
	dir := filepath.Dir(path)
	cmd := exec.Command(binary, append(append([]string{"--quiet"}, simulated(args)...), path)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PLANRUNNER_TEST_LOG="+filepath.Join(dir, "calls.log")), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := &result{dir: dir, plan: path, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running planrunner: %v", err)
	}
	return r
}

// simulated returns args with --simulate first when they name no
// implementer and no mode that runs none: the tests run the built-in
// simulation unless they say otherwise.
func simulated(args []string) []string {
	for _, a := range args {
		switch a {
		case "--implementer-cmd", "--simulate", "--dry-run", "--recover-only", "--resume", "--version":
			return args
		}
	}
	return append([]string{"--simulate"}, args...)
}

// runOnEnv is runOn with more environment variables.
func runOnEnv(t *testing.T, path string, env []string, args ...string) *result {
	t.Helper()
	return runCmd(t, path, env, args...)
}

// waitGone polls until no process has the id pid (a process killed with
// its group is reaped by init soon after); it fails the test after a wide
// deadline.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived planrunner", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runFixture copies a fixture and runs the binary on it.
func runFixture(t *testing.T, name string, args ...string) *result {
	t.Helper()
	return runOn(t, fixture(t, name), args...)
}

func (r *result) planText(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(r.plan)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (r *result) summaryPath(n int) string {
	return filepath.Join(r.dir, "summaries", fmt.Sprintf("%03d-iteration-%d-summary.md", n, n))
}

func (r *result) summary(t *testing.T, n int) string {
	t.Helper()
	data, err := os.ReadFile(r.summaryPath(n))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (r *result) summaries(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(r.dir, "summaries"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func (r *result) log(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// signalBlock parses the last orchestrator signal block in text.
func signalBlock(t *testing.T, text string) map[string]string {
	t.Helper()
	i := strings.LastIndex(text, "IMPLEMENTATION_COMPLETE:")
	if i < 0 {
		t.Fatalf("no signal block in:\n%s", text)
	}
	sig := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text[i:]))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			break
		}
		sig[k] = v
	}
	return sig
}

// pick returns the listed keys of sig.
func pick(sig map[string]string, keys map[string]string) map[string]string {
	got := map[string]string{}
	for k := range keys {
		got[k] = sig[k]
	}
	return got
}

func summaryNames(n int) []string {
	var names []string
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("%03d-iteration-%d-summary.md", i, i))
	}
	return names
}

// TestIterationLoop covers the iteration loop test cases of seed 003.
func TestIterationLoop(t *testing.T) {
	tests := []struct {
		name      string
		fixture   string
		args      []string
		wantCode  int
		wantIters int
		// wantSignal is compared with the final signal block; wantFirst
		// with the first iteration's summary.
		wantSignal map[string]string
		wantFirst  map[string]string
		wantOut    []string
		check      func(t *testing.T, r *result)
	}{
		{
			name:      "seed003_single_iteration_all_work_complete",
			fixture:   "single_iteration.md",
			wantCode:  exitOK,
			wantIters: 1,
			wantSignal: map[string]string{"IMPLEMENTATION_COMPLETE": "3", "work_remaining": "0", "requires_continuation": "false",
				"context_exhausted": "false", "stuck_detected": "false", "context_usage_percent": "12.0%"},
			wantOut: []string{"Iteration 1/5: 3 of 3 remaining phase(s) in 1 wave(s)", "Stopped: converged after 1 iteration(s): work complete"},
			check: func(t *testing.T, r *result) {
				plan := r.planText(t)
				if !strings.Contains(plan, "- **Status**: [COMPLETE]") || strings.Count(plan, "[COMPLETE]") != 4 || strings.Contains(plan, "[ ]") {
					t.Errorf("plan not completed:\n%s", plan)
				}
			},
		},
		{
			name:      "seed003_multi_iteration_work_remaining",
			fixture:   "multi_iteration.md",
			args:      []string{"--sim-tasks-per-call", "2"},
			wantCode:  exitOK,
			wantIters: 4,
			wantSignal: map[string]string{"IMPLEMENTATION_COMPLETE": "4", "work_remaining": "0", "requires_continuation": "false",
				"stuck_detected": "false"},
			wantFirst: map[string]string{"IMPLEMENTATION_COMPLETE": "1", "work_remaining": "Phase_2 Phase_3 Phase_4",
				"requires_continuation": "true", "stuck_detected": "false"},
			check: func(t *testing.T, r *result) {
				second := r.summary(t, 2)
				if !strings.Contains(second, "Continued from: "+r.summaryPath(1)) {
					t.Errorf("iteration 2 does not continue from iteration 1:\n%s", second)
				}
			},
		},
		{
			name:      "seed003_context_threshold_continuation",
			fixture:   "context_continuation.md",
			args:      []string{"--context-window", "80000"},
			wantCode:  exitOK,
			wantIters: 2,
			wantSignal: map[string]string{"IMPLEMENTATION_COMPLETE": "10", "work_remaining": "0", "context_exhausted": "false",
				"requires_continuation": "false"},
			wantFirst: map[string]string{"IMPLEMENTATION_COMPLETE": "5", "work_remaining": "Phase_6 Phase_7 Phase_8 Phase_9 Phase_10",
				"context_exhausted": "true", "context_usage_percent": "87.5%", "requires_continuation": "true"},
			wantOut: []string{"Iteration 1/5: 5 of 10 remaining phase(s) in 1 wave(s); context threshold: deferring Phase 6, Phase 7, Phase 8, Phase 9, Phase 10"},
			check: func(t *testing.T, r *result) {
				first := r.summary(t, 1)
				for _, want := range []string{"## Continuation", "Another phase would have brought the context estimate to the threshold (90.0%): this iteration stopped early and checkpointed.",
					"### Deferred to the next iteration (context threshold)", "**Current Context Usage**: ~70,000 / 80,000 tokens (87.5%)"} {
					if !strings.Contains(first, want) {
						t.Errorf("first summary lacks %q:\n%s", want, first)
					}
				}
			},
		},
		{
			name:      "seed003_stuck_detection",
			fixture:   "stuck.md",
			args:      []string{"--sim-fail", "Phase 2"},
			wantCode:  exitStuck,
			wantIters: 3,
			wantSignal: map[string]string{"IMPLEMENTATION_COMPLETE": "2", "work_remaining": "Phase_2", "stuck_detected": "true",
				"requires_continuation": "true"},
			wantFirst: map[string]string{"work_remaining": "Phase_2", "stuck_detected": "false"},
			wantOut:   []string{"Stopped: stuck after 3 iteration(s): stuck: work remaining unchanged for 2 iterations: Phase_2"},
			check: func(t *testing.T, r *result) {
				if got := signalBlock(t, r.summary(t, 2))["stuck_detected"]; got != "false" {
					t.Errorf("iteration 2 stuck_detected = %s, want false", got)
				}
				if !strings.Contains(r.summary(t, 3), "**Stuck Detected**: true") {
					t.Errorf("last summary does not report stuck:\n%s", r.summary(t, 3))
				}
			},
		},
		{
			name:      "seed003_max_iterations_reached",
			fixture:   "max_iterations.md",
			args:      []string{"--sim-tasks-per-call", "1", "--max-iterations", "3"},
			wantCode:  exitIncomplete,
			wantIters: 3,
			wantSignal: map[string]string{"IMPLEMENTATION_COMPLETE": "12", "requires_continuation": "true", "stuck_detected": "false",
				"work_remaining": "Phase_13 Phase_14 Phase_15 Phase_16 Phase_17 Phase_18 Phase_19 Phase_20"},
			wantOut: []string{"Stopped: max_iterations after 3 iteration(s): max iterations reached: 3 of 3"},
			check: func(t *testing.T, r *result) {
				if s := r.summary(t, 3); !strings.Contains(s, "**Iteration**: 3/3") || !strings.Contains(s, "**Completion**: 60.0% (12/20 phases complete)") {
					t.Errorf("last summary:\n%s", s)
				}
				if !strings.Contains(r.planText(t), "- **Status**: [IN PROGRESS]") {
					t.Error("plan status changed although work remains")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runFixture(t, tt.fixture, tt.args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if diff := cmp.Diff(summaryNames(tt.wantIters), r.summaries(t)); diff != "" {
				t.Errorf("summaries (-want +got):\n%s", diff)
			}
			sig := signalBlock(t, r.stdout)
			if diff := cmp.Diff(tt.wantSignal, pick(sig, tt.wantSignal)); diff != "" {
				t.Errorf("final signal (-want +got):\n%s", diff)
			}
			if want := r.summaryPath(tt.wantIters); sig["summary_path"] != want {
				t.Errorf("summary_path = %s, want %s", sig["summary_path"], want)
			}
			// The last summary ends with the signal printed on stdout.
			if diff := cmp.Diff(sig, signalBlock(t, r.summary(t, tt.wantIters))); diff != "" {
				t.Errorf("stdout and summary signals differ (-stdout +summary):\n%s", diff)
			}
			if tt.wantFirst != nil {
				first := signalBlock(t, r.summary(t, 1))
				if diff := cmp.Diff(tt.wantFirst, pick(first, tt.wantFirst)); diff != "" {
					t.Errorf("first iteration's signal (-want +got):\n%s", diff)
				}
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestPhaseMarkerRecovery covers the phase marker recovery test cases of
// seed 003 (Block 1d).
func TestPhaseMarkerRecovery(t *testing.T) {
	tests := []struct {
		name       string
		fixture    string
		args       []string
		wantCode   int
		wantOut    []string
		notOut     []string
		wantStatus string // the plan's **Status** line
		wantMarked []int  // phases whose heading has [COMPLETE]
	}{
		{
			name:       "seed003_all_markers_present",
			fixture:    "all_markers.md",
			wantOut:    []string{"Phases: 3, marked [COMPLETE]: 3", "All phases marked complete", "Plan status: COMPLETE (updated)"},
			notOut:     []string{"Recovered"},
			wantStatus: "- **Status**: [COMPLETE]",
			wantMarked: []int{1, 2, 3},
		},
		{
			name:       "seed003_missing_markers_all_tasks_complete",
			fixture:    "missing_markers.md",
			wantOut:    []string{"Phases: 3, marked [COMPLETE]: 0", "Recovered 3 missing marker(s): Phase 1, Phase 2, Phase 3 (3/3 marked)", "Plan status: COMPLETE (updated)"},
			wantStatus: "- **Status**: [COMPLETE]",
			wantMarked: []int{1, 2, 3},
		},
		{
			name:       "seed003_partial_completion",
			fixture:    "partial_completion.md",
			args:       []string{"--recover-only"},
			wantOut:    []string{"Phases: 5, marked [COMPLETE]: 0", "Recovered 3 missing marker(s): Phase 1, Phase 2, Phase 3 (3/5 marked)", "Plan status: IN PROGRESS"},
			wantStatus: "- **Status**: [IN PROGRESS]",
			wantMarked: []int{1, 2, 3},
		},
		{
			name:       "seed003_partial_completion_recovered_after_wave",
			fixture:    "partial_completion.md",
			args:       []string{"--sim-fail", "Phase 4,Phase 5"},
			wantCode:   exitStuck,
			wantOut:    []string{"markers: 3/5 phases marked [COMPLETE], recovered: Phase 1, Phase 2, Phase 3", "Recovered after the waves: Phase 1, Phase 2, Phase 3", "Plan status: IN PROGRESS"},
			wantStatus: "- **Status**: [IN PROGRESS]",
			wantMarked: []int{1, 2, 3},
		},
		{
			name:       "seed003_markers_recovered_when_implementer_skips_them",
			fixture:    "skip_markers.md",
			args:       []string{"--sim-skip-markers"},
			wantOut:    []string{"markers: 1/2 phases marked [COMPLETE], recovered: Phase 1", "markers: 2/2 phases marked [COMPLETE], recovered: Phase 2", "Recovered after the waves: Phase 1, Phase 2"},
			wantStatus: "- **Status**: COMPLETE",
			wantMarked: []int{1, 2},
		},
		{
			name:    "seed003_checkbox_consistency_warnings",
			fixture: "inconsistent.md",
			args:    []string{"--recover-only"},
			wantOut: []string{
				"WARNING: checkbox consistency: Phase 1 is marked [COMPLETE] but has 1 unchecked task(s)",
				`WARNING: checkbox consistency: Phase 2: task "Parent task" is checked but its sub-task "Child two" is not`,
				"WARNING: checkbox consistency: plan status is COMPLETE but some phases are incomplete",
			},
			wantStatus: "**Status**: COMPLETE",
			wantMarked: []int{1, 3},
		},
		{
			name:    "seed003_file_based_mode_skip",
			fixture: "theorems.lean",
			wantOut: []string{"File-based mode: Skipping phase marker recovery", "Iteration 1/1: file-based mode, 3 open item(s), single pass"},
			notOut:  []string{"Phase marker validation", "Wave "},
		},
		{
			name:    "seed003_file_based_mode_skip_recover_only",
			fixture: "theorems.lean",
			args:    []string{"--recover-only"},
			wantOut: []string{"File-based mode: Skipping phase marker recovery"},
			notOut:  []string{"Phase marker validation"},
		},
	}
	headingRe := regexp.MustCompile(`(?m)^### Phase (\d+):.*\[COMPLETE\]$`)
	statusRe := regexp.MustCompile(`(?m)^.*\*\*Status\*\*.*$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runFixture(t, tt.fixture, tt.args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
				}
			}
			for _, not := range tt.notOut {
				if strings.Contains(r.stdout, not) {
					t.Errorf("stdout has %q:\n%s", not, r.stdout)
				}
			}
			plan := r.planText(t)
			if got := statusRe.FindString(plan); got != tt.wantStatus {
				t.Errorf("status line %q, want %q", got, tt.wantStatus)
			}
			var marked []int
			for _, m := range headingRe.FindAllStringSubmatch(plan, -1) {
				n, _ := strconv.Atoi(m[1])
				marked = append(marked, n)
			}
			if diff := cmp.Diff(tt.wantMarked, marked); diff != "" {
				t.Errorf("marked phases (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("seed003_recovery_is_idempotent", func(t *testing.T) {
		path := fixture(t, "partial_completion.md")
		runOn(t, path, "--recover-only")
		once, _ := os.ReadFile(path)
		r := runOn(t, path, "--recover-only")
		twice, _ := os.ReadFile(path)
		if diff := cmp.Diff(string(once), string(twice)); diff != "" {
			t.Errorf("second recovery changed the plan:\n%s", diff)
		}
		if !strings.Contains(r.stdout, "No markers to recover: 2 phase(s) incomplete") {
			t.Errorf("second recovery:\n%s", r.stdout)
		}
	})

	t.Run("seed003_partial_completion_leaves_incomplete_phases_unchanged", func(t *testing.T) {
		orig, _ := os.ReadFile(filepath.Join("testdata", "partial_completion.md"))
		r := runFixture(t, "partial_completion.md", "--recover-only")
		want := string(orig)
		for _, n := range []string{"1", "2", "3"} {
			want = strings.Replace(want, "### Phase "+n+": Theorem "+n+"\n", "### Phase "+n+": Theorem "+n+" [COMPLETE]\n", 1)
		}
		if diff := cmp.Diff(want, r.planText(t)); diff != "" {
			t.Errorf("plan (-want +got):\n%s", diff)
		}
	})

	t.Run("a_new_run_keeps_earlier_summaries", func(t *testing.T) {
		path := fixture(t, "stuck.md")
		runOn(t, path, "--sim-fail", "Phase 2", "--max-iterations", "1")
		r := runOn(t, path, "--sim-fail", "Phase 2", "--max-iterations", "1")
		want := []string{"001-iteration-1-summary.md", "002-iteration-1-summary.md"}
		if diff := cmp.Diff(want, r.summaries(t)); diff != "" {
			t.Errorf("summaries (-want +got):\n%s", diff)
		}
	})

	t.Run("file_based_mode_proves_the_sorries", func(t *testing.T) {
		r := runFixture(t, "theorems.lean")
		lean := r.planText(t)
		if strings.Count(lean, "sorry") != 1 || strings.Count(lean, "  trivial") != 3 {
			t.Errorf("lean file after the pass:\n%s", lean)
		}
		if s := r.summary(t, 1); !strings.Contains(s, "**Mode**: file-based (single pass, no waves, no phase marker recovery)") {
			t.Errorf("summary:\n%s", s)
		}
	})

	t.Run("file_mode_is_a_single_pass", func(t *testing.T) {
		r := runFixture(t, "no_phases.md", "--file-mode", "--sim-tasks-per-call", "0")
		if r.code != exitOK || !strings.Contains(r.planText(t), "- [x] not a plan") {
			t.Errorf("exit %d, plan:\n%s\nstdout:\n%s", r.code, r.planText(t), r.stdout)
		}
		r = runFixture(t, "multi_iteration.md", "--file-mode", "--sim-tasks-per-call", "3")
		if r.code != exitIncomplete || !strings.Contains(r.stdout, "Iteration 1/1") {
			t.Errorf("exit %d, want %d with one iteration:\n%s", r.code, exitIncomplete, r.stdout)
		}
		if got := strings.Count(r.planText(t), "[x]"); got != 3 {
			t.Errorf("%d tasks checked, want 3", got)
		}
	})
}

var rateRe = regexp.MustCompile(`\*\*Rate limit\*\*: (\d+) of (\d+) external calls used \(budget \d+ per wave\); local fallback: (\d+)`)

// TestRateLimitCoordination: seed 003's shared budget of external calls per
// wave, divided among the wave's phases, with a local fallback.
func TestRateLimitCoordination(t *testing.T) {
	// rate_limit.md: two waves of three phases with three tasks each.
	tests := []struct {
		budget     int
		wantShares string // the per-phase cells "external (share)" of a wave
	}{
		{3, "1 (1),1 (1),1 (1)"},
		{2, "1 (1),1 (1),0 (0)"},
		{4, "2 (2),1 (1),1 (1)"},
		{0, "0 (0),0 (0),0 (0)"},
		{12, "3 (4),3 (4),3 (4)"},
	}
	cellRe := regexp.MustCompile(`\| \d+/\d+ \| (\d+ \(\d+\)) \|`)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("seed003_budget_%d_divided_among_3_phases", tt.budget), func(t *testing.T) {
			r := runFixture(t, "rate_limit.md", "--rate-limit-budget", strconv.Itoa(tt.budget))
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			s := r.summary(t, 1)
			waves := rateRe.FindAllStringSubmatch(s, -1)
			if len(waves) != 2 {
				t.Fatalf("want 2 waves with a rate limit line:\n%s", s)
			}
			for _, w := range waves {
				external, _ := strconv.Atoi(w[1])
				local, _ := strconv.Atoi(w[3])
				if external > tt.budget {
					t.Errorf("wave used %d external calls, budget %d", external, tt.budget)
				}
				if want := min(tt.budget, 9); external != want || local != 9-want {
					t.Errorf("external %d, local %d; want %d and %d (local fallback once the shares are spent)", external, local, want, 9-want)
				}
			}
			var cells []string
			for _, m := range cellRe.FindAllStringSubmatch(s, -1) {
				cells = append(cells, m[1])
			}
			want := strings.Split(tt.wantShares+","+tt.wantShares, ",")
			if diff := cmp.Diff(want, cells); diff != "" {
				t.Errorf("per-phase calls (share) (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("seed003_external_implementer_calls_per_wave_within_budget", func(t *testing.T) {
		r := runFixture(t, "rate_limit.md", "--rate-limit-budget", "3", "--implementer-cmd", script(t, "impl_ok.sh"))
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		endRe := regexp.MustCompile(`^end iteration=(\d+) wave=(\d+) phase=(\d+) external=(\d+) budget=(\d+)$`)
		perWave := map[string]int{}
		budgets := map[string]int{}
		for _, line := range r.log(t) {
			m := endRe.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			ext, _ := strconv.Atoi(m[4])
			share, _ := strconv.Atoi(m[5])
			perWave["iteration "+m[1]+" wave "+m[2]] += ext
			budgets["iteration "+m[1]+" wave "+m[2]] += share
		}
		want := map[string]int{"iteration 1 wave 1": 3, "iteration 1 wave 2": 3}
		if diff := cmp.Diff(want, perWave); diff != "" {
			t.Errorf("external calls per wave (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, budgets); diff != "" {
			t.Errorf("shares handed out per wave (-want +got):\n%s", diff)
		}
	})

	t.Run("seed003_share_enforced", func(t *testing.T) {
		orig, _ := os.ReadFile(filepath.Join("testdata", "rate_limit.md"))
		r := runFixture(t, "rate_limit.md", "--max-iterations", "1", "--implementer-cmd", script(t, "impl_greedy.sh"))
		if r.code != exitIncomplete {
			t.Fatalf("exit %d, want %d\n%s%s", r.code, exitIncomplete, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "Phase 1: FAILED: Phase 1 made 2 external calls, its share of the wave's budget is 1") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		if diff := cmp.Diff(string(orig), r.planText(t)); diff != "" {
			t.Errorf("a refused report changed the plan:\n%s", diff)
		}
	})
}

// TestWaves checks that dependencies order the waves and that the phases of
// a wave run under the parallelism limit.
func TestWaveExecution(t *testing.T) {
	t.Run("seed003_dependency_runs_in_a_later_wave", func(t *testing.T) {
		r := runFixture(t, "dependencies.md", "--implementer-cmd", script(t, "impl_ok.sh"))
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		log := r.log(t)
		at := func(prefix string, phase int) int {
			for i, l := range log {
				if strings.HasPrefix(l, prefix) && strings.Contains(l, fmt.Sprintf(" phase=%d", phase)) &&
					!strings.Contains(l, fmt.Sprintf(" phase=%d0", phase)) {
					return i
				}
			}
			t.Fatalf("no %q of phase %d in log:\n%s", prefix, phase, strings.Join(log, "\n"))
			return -1
		}
		for _, dep := range [][2]int{{1, 2}, {2, 4}, {3, 4}} {
			if at("end", dep[0]) > at("start", dep[1]) {
				t.Errorf("Phase %d started before Phase %d ended:\n%s", dep[1], dep[0], strings.Join(log, "\n"))
			}
		}
		s := r.summary(t, 1)
		for _, want := range []string{"### Wave 1: Phase 1, Phase 3", "### Wave 2: Phase 2", "### Wave 3: Phase 4"} {
			if !strings.Contains(s, want) {
				t.Errorf("summary lacks %q:\n%s", want, s)
			}
		}
	})

	t.Run("seed003_dependency_on_failed_phase_blocks", func(t *testing.T) {
		r := runFixture(t, "dependencies.md", "--sim-fail", "Phase 1", "--max-iterations", "1")
		if r.code != exitIncomplete {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{"Phase 1: FAILED: Phase 1: simulated implementer failure", "Phase 2: Phase 2 blocked: waiting for Phase 1",
			"Phase 3: 1/1 tasks done [COMPLETE]", "Phase 4: Phase 4 blocked: waiting for Phase 2"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
		// The session's history (what inspect and iterate/view show)
		// counts Phase 1 as the iteration's one failed task: the blocked
		// phases did not run and did not fail.
		rep := inspectSession(t, filepath.Join(r.dir, ".planrunner"))
		recs := rep.History.Recent
		if len(recs) != 2 {
			t.Fatalf("history: %+v", recs)
		}
		it := recs[1]
		var failures []string
		for _, f := range it.TaskRuns {
			if f.Failed() {
				failures = append(failures, f.Err)
			}
		}
		// A blocked phase's task says why in its output.
		var outputs []string
		for _, f := range it.TaskRuns {
			outputs = append(outputs, f.Output)
		}
		if !slices.Contains(outputs, "Phase 2 blocked: waiting for Phase 1") || !slices.Contains(outputs, "Phase 4 blocked: waiting for Phase 2") {
			t.Errorf("iteration 1: task outputs %q, want the blocked phases' reasons", outputs)
		}
		if it.Tasks != 4 || it.FailedTasks != 1 || rep.Totals.FailedTasks != 1 || it.Failed ||
			len(failures) != 1 || !strings.Contains(failures[0], "simulated implementer failure") {
			t.Errorf("iteration 1: %d tasks, %d failed (totals %d), failed %v, failures %q; want 4 tasks, 1 failed: Phase 1's",
				it.Tasks, it.FailedTasks, rep.Totals.FailedTasks, it.Failed, failures)
		}
		// The named scores a chart of the plan shows: Phase 3 (one task)
		// is done.
		for _, rec := range recs {
			want := map[string]float64{"tasks done": float64(rec.Iteration), "phases complete": float64(rec.Iteration)}
			if diff := cmp.Diff(want, rec.Scores); diff != "" {
				t.Errorf("iteration %d's scores (-want +got):\n%s", rec.Iteration, diff)
			}
		}
	})

	t.Run("parallel_limit_1_runs_phases_one_at_a_time", func(t *testing.T) {
		r := runFixture(t, "single_iteration.md", "--parallel", "1", "--implementer-cmd", script(t, "impl_ok.sh"))
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		log := r.log(t)
		if len(log) != 6 {
			t.Fatalf("log:\n%s", strings.Join(log, "\n"))
		}
		for i, l := range log {
			want := "start"
			if i%2 == 1 {
				want = "end"
			}
			if !strings.HasPrefix(l, want) {
				t.Errorf("log line %d = %q, want %s (phases overlap)", i, l, want)
			}
		}
	})

	// The limit is wide (phases that do not hang finish far sooner, even
	// on a loaded machine); the hanging phase hangs until it is killed, so
	// only the limit ends it.
	t.Run("phase_timeout_stops_a_slow_implementer", func(t *testing.T) {
		path := fixture(t, "single_iteration.md")
		cmd := exec.Command(binary, "--quiet", "--max-iterations", "1", "--phase-timeout", "5s", "--implementer-cmd", script(t, "impl_ok.sh"), path)
		cmd.Dir = filepath.Dir(path)
		cmd.Env = append(os.Environ(), "HANG_PHASE=2", "HANG_FIFO="+os.DevNull)
		out, err := cmd.Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitIncomplete {
			t.Fatalf("err %v, want exit %d\n%s", err, exitIncomplete, out)
		}
		for _, want := range []string{"Phase 2: FAILED: Phase 2: implementer stopped: context deadline exceeded", "Phase 1: 2/2 tasks done [COMPLETE]"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("phase_timeout_ends_the_implementers_children", func(t *testing.T) {
		path := fixture(t, "single_iteration.md")
		dir := filepath.Dir(path)
		r := runOnEnv(t, path, []string{"ORPHAN_DIR=" + dir}, "--max-iterations", "1", "--phase-timeout", "2s",
			"--implementer-cmd", script(t, "impl_orphan.sh"))
		if r.code != exitIncomplete {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for phase := 1; phase <= 3; phase++ {
			data, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(phase)+".pid"))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			waitGone(t, pid)
		}
	})

	t.Run("large_stdout_keeps_the_report_at_its_end", func(t *testing.T) {
		r := runFixture(t, "single_iteration.md", "--implementer-cmd", script(t, "impl_loud.sh"))
		if r.code != exitOK {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "Phase 1: 2/2 tasks done [COMPLETE]") || !strings.Contains(r.stdout, "note: (stdout cut: first ") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		if !strings.Contains(r.summary(t, 1), "**Note** (Phase 1): (stdout cut: first ") {
			t.Errorf("summary does not say that stdout was cut:\n%s", r.summary(t, 1))
		}
	})

	t.Run("large_stderr_is_capped_on_the_terminal_and_in_the_summary", func(t *testing.T) {
		path := fixture(t, "single_iteration.md")
		r := runOnEnv(t, path, []string{"LOUD_STDERR=1"}, "--max-iterations", "1", "--implementer-cmd", script(t, "impl_loud.sh"))
		if r.code != exitIncomplete {
			t.Fatalf("exit %d\n%.2000s", r.code, r.stdout)
		}
		if !strings.Contains(r.stdout, "Phase 1: FAILED: Phase 1: implementer failed: exit status 1: …eee") {
			t.Errorf("stdout:\n%.2000s", r.stdout)
		}
		for name, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "summary": r.summary(t, 1)} {
			for line := range strings.Lines(text) {
				if len(line) > 2*maxErrLine {
					t.Errorf("%s has a line of %d bytes: %.200s…", name, len(line), line)
				}
			}
		}
	})

	t.Run("implementer_failure_is_reported", func(t *testing.T) {
		r := runFixture(t, "single_iteration.md", "--max-iterations", "1", "--implementer-cmd", script(t, "impl_fail.sh"))
		if r.code != exitIncomplete {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		want := "Phase 2: FAILED: Phase 2: implementer failed: exit status 3: lean server crashed on phase 2"
		if !strings.Contains(r.stdout, want) || !strings.Contains(r.summary(t, 1), "lean server crashed on phase 2") {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	})

	t.Run("implementer_protocol_violation_applies_nothing", func(t *testing.T) {
		orig, _ := os.ReadFile(filepath.Join("testdata", "single_iteration.md"))
		r := runFixture(t, "single_iteration.md", "--max-iterations", "1", "--implementer-cmd", script(t, "impl_bad.sh"))
		if !strings.Contains(r.stdout, "implementer protocol violation: task 99 does not exist (2 tasks)") {
			t.Errorf("stdout:\n%s", r.stdout)
		}
		if diff := cmp.Diff(string(orig), r.planText(t)); diff != "" {
			t.Errorf("plan changed:\n%s", diff)
		}
	})

	t.Run("dry_run_prints_waves", func(t *testing.T) {
		path := fixture(t, "dependencies.md")
		r := runOn(t, path, "--dry-run")
		want := "Plan: " + path + ": 4 phases (0 complete, 4 remaining), 3 wave(s)\n" +
			"Wave 1: Phase 1, Phase 3 (call shares 2, 1)\n" +
			"Wave 2: Phase 2 (call shares 3)\n" +
			"Wave 3: Phase 4 (call shares 3)\n" +
			"Context: 4 of 4 remaining phase(s) fit in one iteration (projected 32,000 / 200,000 tokens, threshold 90.0%)\n"
		if diff := cmp.Diff(want, r.stdout); diff != "" || r.code != exitOK {
			t.Errorf("exit %d, stdout (-want +got):\n%s", r.code, diff)
		}
	})
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name     string
		fixture  string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"dependency_cycle", "cycle.md", nil, exitError, "cycle.md: dependency cycle among Phase 1, Phase 2, Phase 3"},
		{"duplicate_phase", "duplicate.md", nil, exitError, "duplicate.md:6: duplicate Phase 1 (first at line 3)"},
		{"unknown_dependency", "unknown_dep.md", nil, exitError, "Phase 1 depends on Phase 7, which does not exist"},
		{"no_phases", "no_phases.md", nil, exitError, "no phases: expected headings like \"### Phase 1: title\""},
		{"malformed_heading", "malformed.md", []string{"--simulate"}, exitError, `malformed.md:6: malformed phase heading "### Phase Two: Deploy"`},
		{"phase_without_tasks", "empty_phase.md", []string{"--simulate"}, exitError, "empty_phase.md:6: Phase 2 has no tasks"},
		{"resume_without_checkpoint", "single_iteration.md", []string{"--resume"}, exitError, "no checkpoint to resume in"},
		{"parallel_zero", "single_iteration.md", []string{"--parallel", "0"}, exitUsage, "--parallel must be at least 1, got 0"},
		{"negative_budget", "single_iteration.md", []string{"--rate-limit-budget", "-1"}, exitUsage, "--rate-limit-budget must not be negative"},
		{"bad_threshold", "single_iteration.md", []string{"--context-threshold", "150"}, exitUsage, "invalid --context-window 200000 / --context-threshold 1.5"},
		{"resume_without_checkpoints", "single_iteration.md", []string{"--resume", "--no-checkpoint"}, exitUsage, "--resume needs checkpoints"},
		{"sim_flags_with_command", "single_iteration.md", []string{"--implementer-cmd", "true", "--sim-skip-markers"}, exitUsage, "--sim-* flags configure the built-in implementer"},
		{"bad_sim_fail", "single_iteration.md", []string{"--sim-fail", "Phase x"}, exitUsage, `--sim-fail: "Phase x" is not a phase`},
		{"bad_session", "single_iteration.md", []string{"--session", "../x"}, exitUsage, "invalid --session"},
		{"unknown_flag", "single_iteration.md", []string{"--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runFixture(t, tt.fixture, tt.args...)
			if r.code != tt.wantCode || !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", r.code, tt.wantCode, r.stderr, tt.wantErr)
			}
		})
	}

	t.Run("arguments", func(t *testing.T) {
		for _, args := range [][]string{{}, {"a.md", "b.md"}} {
			cmd := exec.Command(binary, args...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
				t.Errorf("%v: err %v, want exit %d\n%s", args, err, exitUsage, out)
			}
		}
	})

	t.Run("help_lists_every_flag", func(t *testing.T) {
		out, err := exec.Command(binary, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("--help: %v\n%s", err, out)
		}
		for _, f := range []string{"-implementer-cmd", "-parallel", "-max-iterations", "-context-window", "-context-threshold",
			"-rate-limit-budget", "-phase-timeout", "-summaries", "-state", "-no-checkpoint", "-session", "-resume", "-file-mode",
			"-dry-run", "-recover-only", "-quiet", "-verbose", "-simulate", "-sim-fail", "-sim-tasks-per-call", "-sim-skip-markers", "-json", "-version",
			"Exit codes:", "Implementer protocol"} {
			if !strings.Contains(string(out), f) {
				t.Errorf("--help lacks %q", f)
			}
		}
	})
}

// TestInterruptAndResume: SIGINT stops the run with exit code 130 and the
// state saved; a second run of the same session meanwhile is refused; and
// --resume finishes the plan.
func TestInterruptAndResume(t *testing.T) {
	path := fixture(t, "stuck.md")
	dir := filepath.Dir(path)
	fifo := filepath.Join(dir, "hang.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no fifo: %v", err)
	}
	// A 15,000-token window fits one phase per iteration: iteration 1 does
	// Phase 1, iteration 2 hangs in Phase 2.
	args := []string{"--quiet", "--context-window", "15000", "--implementer-cmd", script(t, "impl_ok.sh"), path}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HANG_PHASE=2", "HANG_FIFO="+fifo)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Open the fifo read-write so the open does not block; wait for the
	// stand-in's line or the process's end, whichever comes first.
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hanging := make(chan struct{})
	go func() {
		bufio.NewReader(f).ReadString('\n')
		close(hanging)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-hanging:
	case err := <-exited:
		f.Write([]byte("\n")) // end the reader
		t.Fatalf("planrunner ended before hanging: %v\n%s", err, stdout.String())
	}

	// The session is locked while the first run is alive.
	second := runOn(t, path, "--context-window", "15000")
	if second.code != exitError || !strings.Contains(second.stderr, "another run is working on this plan") {
		t.Errorf("concurrent run: exit %d\n%s", second.code, second.stderr)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = <-exited
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("interrupted run: %v, want exit %d\n%s", err, exitInterrupted, stdout.String())
	}
	if !strings.Contains(stdout.String(), "Interrupted after 1 iteration(s). State saved in "+filepath.Join(dir, ".planrunner")+"; continue with --resume.") {
		t.Errorf("stdout:\n%s", stdout.String())
	}

	// The resume names no implementer: it continues with the run's own.
	os.Remove(filepath.Join(dir, "calls.log"))
	r := runOn(t, path, "--resume")
	if r.code != exitOK {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if log := strings.Join(r.log(t), "\n"); !strings.Contains(log, "start iteration=2 wave=1 phase=2") || !strings.Contains(log, "start iteration=3 wave=1 phase=3") {
		t.Errorf("the resumed run did not call the implementer for phases 2 and 3:\n%s", log)
	}
	if !strings.Contains(r.stdout, "Iteration 2/5: 1 of 2 remaining phase(s)") || strings.Contains(r.stdout, "Iteration 1/5") {
		t.Errorf("resume did not continue with iteration 2:\n%s", r.stdout)
	}
	if diff := cmp.Diff(summaryNames(3), r.summaries(t)); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
	if got := signalBlock(t, r.stdout)["IMPLEMENTATION_COMPLETE"]; got != "3" {
		t.Errorf("IMPLEMENTATION_COMPLETE = %s, want 3", got)
	}

	// A finished session resumes to its saved result without iterating.
	again := runOn(t, path, "--resume", "--context-window", "15000", "--implementer-cmd", script(t, "impl_ok.sh"))
	if again.code != exitOK || strings.Contains(again.stdout, "Iteration ") || !strings.Contains(again.stdout, "All phases marked complete") {
		t.Errorf("resume of a finished session: exit %d\n%s", again.code, again.stdout)
	}
}

// TestProgressCountsTasks: a phase whose tasks are done one a call makes
// progress every iteration, though it stays remaining until the last: the
// loop is not stuck (seed 003's stuck rule counts tasks, not only whole
// phases), and completes. (An iteration that does no task is still stuck:
// seed003_stuck_detection.)
func TestProgressCountsTasks(t *testing.T) {
	r := runFixture(t, "five_tasks.md", "--sim-tasks-per-call", "1", "--max-iterations", "10")
	if r.code != exitOK || !strings.Contains(r.stdout, "Stopped: converged after 5 iteration(s): work complete") {
		t.Errorf("exit %d, want %d after 5 iterations\n%s%s", r.code, exitOK, r.stdout, r.stderr)
	}
	if plan := r.planText(t); strings.Contains(plan, "- [ ]") {
		t.Errorf("tasks left:\n%s", plan)
	}
}

// inspectSession returns the report of the one session saved in the
// checkpoint directory dir.
func inspectSession(t *testing.T, dir string) *iterate.Report {
	t.Helper()
	ctx := context.Background()
	var names []string
	for c, err := range checkpoint.NewDir(dir).Sessions(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, c.Session)
	}
	if len(names) != 1 {
		t.Fatalf("sessions in %s: %q, want one", dir, names)
	}
	c, err := checkpoint.NewDir(dir).Load(ctx, names[0])
	if err != nil {
		t.Fatal(err)
	}
	rep, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestKillLeavesNoImplementer: planrunner killed outright (kill -9) takes
// its implementer and the implementer's children with it (rule: no
// external command outlives its orchestrator; catches an implementer
// started without xcmd's watchdog, whose child sleep the parent-death
// signal does not reach).
func TestKillLeavesNoImplementer(t *testing.T) {
	t.Parallel()
	path := fixture(t, "single_iteration.md")
	dir := filepath.Dir(path)
	cmd := exec.Command(binary, "--quiet", "--max-iterations", "1", "--parallel", "1",
		"--implementer-cmd", script(t, "impl_orphan.sh"), path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ORPHAN_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pidfile := filepath.Join(dir, "1.pid")
	var child int
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(pidfile)
		if err == nil {
			if child, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the implementer did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e2etest.KillLeavesNoGroup(t, cmd, child, "the implementer's group")
}

// TestReportedTokensEstimateContext (issue 32): the tokens implementers
// report are the context estimate of the phases they ran, in place of
// budget's default per completed phase (8,000). Catches reported tokens
// ignored (24,000 for the three phases here).
func TestReportedTokensEstimateContext(t *testing.T) {
	t.Parallel()
	path := fixture(t, "single_iteration.md")
	r := runOnEnv(t, path, []string{"IMPL_TOKENS=1000"}, "--implementer-cmd", script(t, "impl_ok.sh"))
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if s := r.summary(t, 1); !strings.Contains(s, "**Current Context Usage**: ~3,000 / ") {
		t.Errorf("summary does not estimate the context by the reported tokens (3 × 1,000):\n%s", s)
	}
}
