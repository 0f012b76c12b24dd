//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
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

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/examples/internal/e2etest"
	"github.com/refine-go/refine/examples/internal/textfmt"
)

// wantPrompt is the prompt assembled from testdata/prompts/build.
const wantPrompt = `# OODA Loop Iteration

## OBSERVE
Read AGENTS.md, the specs and the work tracking file. Note what changed since
the last iteration.

## ORIENT
Compare the specs with the code. List the gaps, most important first.

## DECIDE
Pick the single most important gap that can be closed in one iteration.

## ACT
Close the gap: write the code and its tests, run the tests, and update the
work tracking file. Then exit.
`

// fixture is a workspace with the build procedure's prompts, and an
// environment for the binary that uses testdata/fakeai.sh as the AI CLI and
// no config but the test's own.
type fixture struct {
	t    *testing.T
	ws   string // the workspace, also the binary's working directory
	aux  string // files of the test outside the workspace
	env  map[string]string
	cred *syscall.Credential
	// bin is the agentloop binary the fixture runs.
	bin string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureIn(t, t.TempDir(), t.TempDir())
}

func newFixtureIn(t *testing.T, ws, aux string) *fixture {
	t.Helper()
	copyDir(t, filepath.Join("testdata", "prompts"), filepath.Join(ws, "prompts"))
	fake, err := filepath.Abs(filepath.Join("testdata", "fakeai.sh"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ws: ws, aux: aux, bin: binary, env: map[string]string{
		"PATH":                    os.Getenv("PATH"),
		"HOME":                    aux,
		"AGENTLOOP_GLOBAL_CONFIG": filepath.Join(aux, "global.json"),
		"AGENTLOOP_AI_CMD":        "bash " + fake,
		"FAKEAI_LOG":              filepath.Join(aux, "fakeai.log"),
		"FAKEAI_PROMPT":           filepath.Join(aux, "prompt.txt"),
	}}
	return f
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) command(extraEnv map[string]string, args ...string) *exec.Cmd {
	cmd := exec.Command(f.bin, args...)
	cmd.Dir = f.ws
	for k, v := range f.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range extraEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// A leaked grandchild holding the output pipes fails the test instead
	// of hanging it.
	cmd.WaitDelay = 20 * time.Second
	if f.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: f.cred}
	}
	return cmd
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary to its end.
func (f *fixture) run(extraEnv map[string]string, args ...string) result {
	f.t.Helper()
	cmd := f.command(extraEnv, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		f.t.Fatalf("running agentloop %v: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// calls returns the lines the fake AI CLI logged, one per call.
func (f *fixture) calls() []string {
	data, err := os.ReadFile(f.env["FAKEAI_LOG"])
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func (f *fixture) stateDir() string { return filepath.Join(f.ws, ".agentloop", "state") }

// stateFiles lists the state directory, without the lock file.
func (f *fixture) stateFiles() []string {
	names, _ := filepath.Glob(filepath.Join(f.stateDir(), "*"))
	var out []string
	for _, n := range names {
		if b := filepath.Base(n); b != "build.lock" {
			out = append(out, b)
		}
	}
	return out
}

// summaryFile reads the seed's state file, build.json.
func (f *fixture) summaryFile() map[string]any {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.stateDir(), "build.json"))
	if err != nil {
		f.t.Fatalf("state file: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		f.t.Fatalf("state file: %v", err)
	}
	return m
}

func (f *fixture) writeConfig(path, content string) {
	f.t.Helper()
	writeFile(f.t, path, content)
}

func callLines(n0, n1, max int) []string {
	var out []string
	for i := n0; i <= n1; i++ {
		out = append(out, fmt.Sprintf("iteration %d of %d (build): %d bytes", i, max, len(strings.TrimSuffix(wantPrompt, "\n"))))
	}
	return out
}

var (
	clockRE    = regexp.MustCompile(`(?m)^\[\d\d:\d\d:\d\d\] `)
	durationRE = regexp.MustCompile(`(completed in|total:) [0-9][0-9hms.µ]*s\b`)
)

// normalize replaces the wall-clock times and durations of progress lines.
func normalize(s string) string {
	s = clockRE.ReplaceAllString(s, "[T] ")
	return durationRE.ReplaceAllString(s, "$1 D")
}

// progress returns the lines of an expected output, with "[T] " prefixed.
func progress(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("[T] " + l + "\n")
	}
	return b.String()
}

// label is "Iteration 2/3", or "Iteration 2" when unlimited.
func label(n, max int) string {
	if max > 0 {
		return fmt.Sprintf("Iteration %d/%d", n, max)
	}
	return fmt.Sprintf("Iteration %d", n)
}

func iterationLines(n0, n1, max int) []string {
	var out []string
	for i := n0; i <= n1; i++ {
		out = append(out, label(i, max)+" starting...", label(i, max)+" completed in D")
	}
	return out
}

func checkRun(t *testing.T, got result, wantCode int, wantStdout string) {
	t.Helper()
	if got.code != wantCode {
		t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", got.code, wantCode, got.stdout, got.stderr)
	}
	if diff := cmp.Diff(wantStdout, normalize(got.stdout)); diff != "" {
		t.Errorf("stdout (-want +got):\n%s\nstderr:\n%s", diff, got.stderr)
	}
}

// TestSeed004Example1LimitedIterations: the happy path runs the given
// number of fresh AI CLI processes, each fed the assembled prompt, and
// removes the state on completion.
func TestSeed004Example1LimitedIterations(t *testing.T) {
	tests := []struct {
		name string
		max  int
	}{
		{"seed004_example1_max_iterations_3", 3},
		{"seed004_max_iterations_1_single_iteration", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			got := f.run(nil, "build", "--max-iterations", strconv.Itoa(tt.max))
			want := progress(slices.Concat(
				[]string{fmt.Sprintf("Starting procedure: build (max %d iterations)", tt.max)},
				iterationLines(1, tt.max, tt.max),
				[]string{fmt.Sprintf("Reached max iterations: %d (total: D)", tt.max)})...)
			checkRun(t, got, exitOK, want)
			if diff := cmp.Diff(callLines(1, tt.max, tt.max), f.calls()); diff != "" {
				t.Errorf("AI CLI calls (-want +got):\n%s", diff)
			}
			prompt, err := os.ReadFile(f.env["FAKEAI_PROMPT"])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantPrompt, string(prompt)); diff != "" {
				t.Errorf("seed004_prompt_on_stdin (-want +got):\n%s", diff)
			}
			if files := f.stateFiles(); len(files) != 0 {
				t.Errorf("seed004_state_removed_on_completion: state left: %q", files)
			}
		})
	}
}

// TestEveryIterationFailed: a run whose every iteration failed, below the
// failure threshold, ends with a line that says so and how, and exit 1.
func TestEveryIterationFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	got := f.run(map[string]string{"FAKEAI_FAIL_ON": "1 2"}, "build", "--max-iterations", "2")
	want := progress(
		"Starting procedure: build (max 2 iterations)",
		"Iteration 1/2 starting...",
		"WARNING: AI CLI failed (exit 1), consecutive failures: 1/3",
		"Iteration 1/2 completed in D",
		"Iteration 2/2 starting...",
		"WARNING: AI CLI failed (exit 1), consecutive failures: 2/3",
		"Iteration 2/2 completed in D",
		"Reached max iterations: 2 (total: D)",
		// The CLI's own reason, the last line of its stderr (issue 32).
		"ERROR: every iteration failed (2 of 2); the last: AI CLI failed (exit 1): fakeai: failing iteration 2",
	)
	checkRun(t, got, exitError, want)

	// One success among failures is a completed run.
	f = newFixture(t)
	got = f.run(map[string]string{"FAKEAI_FAIL_ON": "1"}, "build", "--max-iterations", "2")
	if got.code != exitOK || strings.Contains(got.stdout, "every iteration failed") {
		t.Errorf("one success of two: exit %d\n%s", got.code, got.stdout)
	}
}

// TestAITimeout: an AI CLI that runs longer than --ai-timeout (or
// AGENTLOOP_AI_TIMEOUT) is stopped with its children, and its iteration
// fails; the loop goes on. (The limit leaves a wide margin to the second
// iteration, which must not time out on a loaded machine.)
func TestAITimeout(t *testing.T) {
	for _, how := range []string{"flag", "env"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			childFile := filepath.Join(f.aux, "child.pid")
			env := map[string]string{"FAKEAI_HANG_ON": "1", "FAKEAI_MARKER": filepath.Join(f.aux, "running"), "FAKEAI_CHILD": childFile}
			args := []string{"build", "--max-iterations", "2"}
			if how == "flag" {
				args = append(args, "--ai-timeout", "3s")
			} else {
				env["AGENTLOOP_AI_TIMEOUT"] = "3s"
			}
			got := f.run(env, args...)
			want := progress(
				"Starting procedure: build (max 2 iterations)",
				"Iteration 1/2 starting...",
				"WARNING: AI CLI failed (timed out after 3s), consecutive failures: 1/3",
				"Iteration 1/2 completed in D",
				"Iteration 2/2 starting...",
				"Iteration 2/2 completed in D",
				"Reached max iterations: 2 (total: D)",
			)
			checkRun(t, got, exitOK, want)
			data, err := os.ReadFile(childFile)
			if err != nil {
				t.Fatal(err)
			}
			child, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			waitGone(t, child)
		})
	}
}

// TestSeed004Example2ConsecutiveFailureAbort: failures on iterations 4, 5
// and 6 abort the loop before the limit; the state is kept as aborted.
func TestSeed004Example2ConsecutiveFailureAbort(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	got := f.run(map[string]string{"FAKEAI_FAIL_ON": "4 5 6"}, "build", "--max-iterations", "10")
	want := progress(slices.Concat(
		[]string{"Starting procedure: build (max 10 iterations)"},
		iterationLines(1, 3, 10),
		[]string{
			"Iteration 4/10 starting...",
			"WARNING: AI CLI failed (exit 1), consecutive failures: 1/3",
			"Iteration 4/10 completed in D",
			"Iteration 5/10 starting...",
			"WARNING: AI CLI failed (exit 1), consecutive failures: 2/3",
			"Iteration 5/10 completed in D",
			"Iteration 6/10 starting...",
			"WARNING: AI CLI failed (exit 1), consecutive failures: 3/3",
			"ERROR: Aborting after 3 consecutive failures (6 iterations completed, total: D)",
		})...)
	checkRun(t, got, exitError, want)
	if n := len(f.calls()); n != 6 {
		t.Errorf("%d AI CLI calls, want 6", n)
	}

	st := f.summaryFile()
	for _, k := range []string{"started_at", "last_iteration_at"} {
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(st[k])); err != nil {
			t.Errorf("state file %s: %v", k, err)
		}
		delete(st, k)
	}
	wantState := map[string]any{
		"iteration": 6.0, "max_iterations": 10.0, "consecutive_failures": 3.0, "failure_threshold": 3.0,
		"status": "aborted", "procedure_name": "build",
		"elapsed_per_iteration": []any{"0.0s", "0.0s", "0.0s", "0.0s", "0.0s", "0.0s"},
	}
	// Durations vary: compare their count and form.
	elapsed, _ := st["elapsed_per_iteration"].([]any)
	for i, e := range elapsed {
		if !regexp.MustCompile(`^\d+\.\ds$`).MatchString(fmt.Sprint(e)) {
			t.Errorf("elapsed_per_iteration[%d] = %v", i, e)
		}
		elapsed[i] = "0.0s"
	}
	if diff := cmp.Diff(wantState, st); diff != "" {
		t.Errorf("seed004_state_preserved_as_aborted (-want +got):\n%s", diff)
	}

	// An aborted procedure cannot be resumed; it starts again.
	res := f.run(nil, "resume", "build")
	if res.code != exitError || !strings.Contains(res.stderr, "procedure build already ended (aborted") {
		t.Errorf("resume of an aborted procedure: exit %d, stderr %q", res.code, res.stderr)
	}
	res = f.run(nil, "build", "--max-iterations", "1")
	if res.code != exitOK {
		t.Errorf("start after an abort: exit %d, stderr %q", res.code, res.stderr)
	}
}

// TestSeed004Example5UnlimitedWithRecovery: default_iterations 0 in the
// config runs until the failure threshold; a success resets the count.
func TestSeed004Example5UnlimitedWithRecovery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.writeConfig(filepath.Join(f.ws, ".agentloop", "config.json"), `{"default_iterations": 0}`)
	f.writeConfig(f.env["AGENTLOOP_GLOBAL_CONFIG"], `{"max_iterations": 2}`)
	got := f.run(map[string]string{"FAKEAI_FAIL_ON": "3 6 7 8"}, "build")
	want := progress(slices.Concat(
		[]string{"Starting procedure: build (unlimited iterations)"},
		iterationLines(1, 2, 0),
		[]string{
			"Iteration 3 starting...",
			"WARNING: AI CLI failed (exit 1), consecutive failures: 1/3",
			"Iteration 3 completed in D",
		},
		iterationLines(4, 5, 0),
		[]string{
			"Iteration 6 starting...",
			"WARNING: AI CLI failed (exit 1), consecutive failures: 1/3",
			"Iteration 6 completed in D",
			"Iteration 7 starting...",
			"WARNING: AI CLI failed (exit 1), consecutive failures: 2/3",
			"Iteration 7 completed in D",
			"Iteration 8 starting...",
			"WARNING: AI CLI failed (exit 1), consecutive failures: 3/3",
			"ERROR: Aborting after 3 consecutive failures (8 iterations completed, total: D)",
		})...)
	checkRun(t, got, exitError, want)
	if diff := cmp.Diff(callLines(1, 8, 0), f.calls()); diff != "" {
		t.Errorf("AI CLI calls (-want +got):\n%s", diff)
	}
}

// TestSeed004Example4DryRun: the prompt and its token count are printed,
// the AI CLI is not run and no state is written.
func TestSeed004Example4DryRun(t *testing.T) {
	t.Parallel()
	withContext := wantPrompt + "\n## CONTEXT\n\n### notes.md\nThe build uses Go 1.25. Run go test ./... before declaring a task done.\n"
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{
			name: "seed004_example4_dry_run",
			args: []string{"build", "--dry-run"},
			env:  map[string]string{"AGENTLOOP_AI_CMD": "claude-cli --no-interactive"},
			want: "[DRY RUN] Procedure: build\n" +
				"[DRY RUN] Would execute with: claude-cli --no-interactive\n" +
				"[DRY RUN] Token count: " + textfmt.Tokens(int64(budget.EstimateTokens(wantPrompt))) + " / 100,000 budget\n\n" + wantPrompt,
		},
		{
			name: "seed004_dry_run_over_token_budget_with_context_and_gates",
			args: []string{"--dry-run", "build", "--token-budget", "50", "--context", "notes.md", "--gate", "go test ./..."},
			env:  map[string]string{"AGENTLOOP_AI_CMD": "claude -p"},
			want: "[DRY RUN] Procedure: build\n" +
				"[DRY RUN] Would execute with: claude -p\n" +
				"[DRY RUN] Quality gates: go test ./...\n" +
				"[DRY RUN] Token count: " + strconv.Itoa(budget.EstimateTokens(withContext)) + " / 50 budget\n" +
				"[DRY RUN] WARNING: Prompt exceeds token budget: " + strconv.Itoa(budget.EstimateTokens(withContext)) + " > 50\n\n" + withContext,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			copyDir(t, filepath.Join("testdata", "context"), f.ws)
			got := f.run(tt.env, tt.args...)
			if got.code != exitOK {
				t.Errorf("exit code %d, stderr %q", got.code, got.stderr)
			}
			if diff := cmp.Diff(tt.want, got.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if calls := f.calls(); calls != nil {
				t.Errorf("the AI CLI ran: %q", calls)
			}
			if _, err := os.Stat(filepath.Join(f.ws, ".agentloop")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dry run touched the state: %v", err)
			}
		})
	}
}

// waitFor polls for a file, within a bound. If it never appears, it kills
// the running cmd and fails the test with cmd's output, read once cmd.Wait
// has returned (the output is written meanwhile by cmd's goroutines).
func waitFor(t *testing.T, path string, cmd *exec.Cmd, out *bytes.Buffer) {
	t.Helper()
	for i := 0; i < 3000; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("%s never appeared; output:\n%s", path, out)
}

// gone reports whether the process pid has ended (a zombie no one reaps has
// ended too).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// waitGone waits, within a bound, for the process to end; it kills it and
// fails the test if it does not.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if gone(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d (the AI CLI's child) survived", pid)
}

// hang starts agentloop with the fake AI CLI hanging on iteration 6 (with
// a child process), and waits until it hangs.
func (f *fixture) hang(args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer, child int) {
	f.t.Helper()
	marker := filepath.Join(f.aux, "running")
	childFile := filepath.Join(f.aux, "child.pid")
	os.Remove(marker)
	cmd = f.command(map[string]string{"FAKEAI_HANG_ON": "6", "FAKEAI_MARKER": marker, "FAKEAI_CHILD": childFile}, args...)
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	waitFor(f.t, marker, cmd, stdout)
	data, err := os.ReadFile(childFile)
	if err != nil {
		f.t.Fatal(err)
	}
	child, err = strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		f.t.Fatal(err)
	}
	return cmd, stdout, stderr, child
}

// TestSeed004Example3InterruptAndResume: a signal during the AI CLI kills it
// and its children, saves the state as interrupted, exits 130 and prints the
// resume command; resume continues with the next iteration. While the first
// run is alive, a second start is refused.
func TestSeed004Example3InterruptAndResume(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run("seed004_example3_"+strings.ToLower(sig.String()), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			cmd, stdout, stderr, child := f.hang("build", "--max-iterations", "10")

			// seed004_running_state_refuses_second_start
			for _, args := range [][]string{{"build", "--max-iterations", "10"}, {"resume", "build"}, {"build", "--fresh"}} {
				second := f.run(nil, args...)
				wantErr := fmt.Sprintf("agentloop: procedure build is already running (pid %d); refusing to start a second run of it\n", cmd.Process.Pid)
				if second.code != exitError || second.stderr != wantErr || second.stdout != "" {
					t.Errorf("second %v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, second.code, second.stdout, second.stderr, wantErr)
				}
			}

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("interrupted run: %v, want exit code 130; stderr %s", err, stderr)
			}
			want := progress(slices.Concat(
				[]string{"Starting procedure: build (max 10 iterations)"},
				iterationLines(1, 5, 10),
				[]string{
					"Iteration 6/10 starting...",
					"Interrupted. State saved. Resume with: agentloop resume build",
				})...)
			if diff := cmp.Diff(want, normalize(stdout.String())); diff != "" {
				t.Errorf("interrupted run (-want +got):\n%s\nstderr: %s", diff, stderr)
			}
			waitGone(t, child) // seed004_ctrl_c_kills_the_ai_cli_and_its_children

			st := f.summaryFile()
			if st["status"] != "interrupted" || st["iteration"] != 5.0 || st["max_iterations"] != 10.0 {
				t.Errorf("seed004_state_saved_as_interrupted: %v", st)
			}

			// seed004_interrupted_state_offers_resume
			again := f.run(nil, "build", "--max-iterations", "10")
			wantOffer := "agentloop: procedure build was interrupted after 5 iterations (max 10).\nResume with: agentloop resume build\nor start over with: agentloop build --fresh\n"
			if again.code != exitError || again.stderr != wantOffer {
				t.Errorf("start over an interrupted state: exit %d, stderr %q; want 1 and %q", again.code, again.stderr, wantOffer)
			}

			resumed := f.run(nil, "resume", "build")
			want = progress(slices.Concat(
				[]string{
					"Resuming procedure: build from iteration 5 (max 10)",
					"Previous session: 5 iterations completed in D",
				},
				iterationLines(6, 10, 10),
				[]string{"Reached max iterations: 10 (total: D)"})...)
			checkRun(t, resumed, exitOK, want)
			if diff := cmp.Diff(slices.Concat(callLines(1, 6, 10), callLines(6, 10, 10)), f.calls()); diff != "" {
				t.Errorf("seed004_resume_after_5_of_10_continues_from_6: AI CLI calls (-want +got):\n%s", diff)
			}
			if files := f.stateFiles(); len(files) != 0 {
				t.Errorf("state left after the resumed run completed: %q", files)
			}
		})
	}
}

// TestSecondInterruptKeepsState: a second signal, while agentloop waits
// for an AI CLI that ignores SIGTERM, kills the AI CLI at once but does not
// end agentloop before it has saved the interrupted state. (A SIGINT
// ignored by the shell that started the tests stays ignored in agentloop
// once it stops listening: the SIGTERM case does not depend on that.)
func TestSecondInterruptKeepsState(t *testing.T) {
	for _, second := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run("sigint_then_"+strings.ToLower(second.String()), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			term := filepath.Join(f.aux, "term")
			f.env["FAKEAI_TRAP_TERM"] = term
			cmd, stdout, stderr, child := f.hang("build", "--max-iterations", "10")
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			waitFor(t, term, cmd, stdout) // the first interrupt reached the AI CLI
			if err := cmd.Process.Signal(second); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("interrupted run: %v, want exit code 130; stderr %s", err, stderr)
			}
			waitGone(t, child)
			lines := strings.Split(strings.TrimSuffix(normalize(stdout.String()), "\n"), "\n")
			if last := lines[len(lines)-1]; last != "[T] Interrupted. State saved. Resume with: agentloop resume build" {
				t.Errorf("last line %q, want the saved interruption\nstdout:\n%s", last, stdout)
			}
			if st := f.summaryFile(); st["status"] != "interrupted" || st["iteration"] != 5.0 {
				t.Errorf("state after two signals: %v", st)
			}
			if !strings.Contains(stderr.String(), "interrupted again") {
				t.Errorf("stderr does not acknowledge the second signal: %q", stderr)
			}
			resumed := f.run(nil, "resume", "build", "--max-iterations", "6")
			if resumed.code != exitOK || !strings.Contains(resumed.stdout, "Resuming procedure: build from iteration 5") {
				t.Errorf("resume after two signals: exit %d\n%s%s", resumed.code, resumed.stdout, resumed.stderr)
			}
		})
	}
}

// TestResumeAfterCrash: a run killed outright leaves no AI CLI process
// behind and its state "running"; with no live process holding it, the
// next start offers resume, and resume continues.
func TestResumeAfterCrash(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cmd, _, _, child := f.hang("build", "--max-iterations", "7")
	// A crash (kill -9: no chance to clean up). The AI CLI and its child
	// die with agentloop (issue 32, item 1; rule: no command outlives its
	// orchestrator; catches an AI CLI started without xcmd's watchdog,
	// whose child the parent-death signal does not reach).
	e2etest.KillLeavesNoGroup(t, cmd, child, "the AI CLI's group")

	if st := f.summaryFile(); st["status"] != "running" || st["iteration"] != 5.0 {
		t.Errorf("state after a crash: %v", st)
	}
	again := f.run(nil, "build")
	if again.code != exitError || !strings.Contains(again.stderr, "procedure build did not finish (its run is gone: crashed?) after 5 iterations (max 7).\nResume with: agentloop resume build") {
		t.Errorf("seed004_crashed_running_state: exit %d, stderr %q", again.code, again.stderr)
	}
	resumed := f.run(nil, "resume", "build")
	want := progress(slices.Concat(
		[]string{
			"Resuming procedure: build from iteration 5 (max 7)",
			"Previous session: 5 iterations completed in D",
		},
		iterationLines(6, 7, 7),
		[]string{"Reached max iterations: 7 (total: D)"})...)
	checkRun(t, resumed, exitOK, want)

	// --fresh discards a resumable state.
	f2 := newFixture(t)
	cmd, _, _, child = f2.hang("build", "--max-iterations", "7")
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	waitGone(t, child)
	fresh := f2.run(nil, "build", "--fresh", "--max-iterations", "2")
	checkRun(t, fresh, exitOK, progress(slices.Concat(
		[]string{"Starting procedure: build (max 2 iterations)"},
		iterationLines(1, 2, 2),
		[]string{"Reached max iterations: 2 (total: D)"})...))
	if files := f2.stateFiles(); len(files) != 0 {
		t.Errorf("state left after a fresh run: %q", files)
	}
}

// TestResumedStateFile: a resumed run's state file carries on the timings
// of the run it resumes (last_iteration_at from the engine, the durations of
// every earlier iteration), also when the previous state file is missing
// and the resumed run is interrupted before its first iteration ends.
func TestResumedStateFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cmd, _, _, child := f.hang("build", "--max-iterations", "10")
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	waitGone(t, child)
	before := f.summaryFile()
	if err := os.Remove(filepath.Join(f.stateDir(), "build.json")); err != nil {
		t.Fatal(err)
	}

	cmd, stdout, _, child := f.hang("resume", "build")
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	waitGone(t, child)
	want := progress(
		"Resuming procedure: build from iteration 5 (max 10)",
		"Previous session: 5 iterations completed in D",
		"Iteration 6/10 starting...",
		"Interrupted. State saved. Resume with: agentloop resume build")
	if diff := cmp.Diff(want, normalize(stdout.String())); diff != "" {
		t.Errorf("resumed run (-want +got):\n%s", diff)
	}
	after := f.summaryFile()
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("seed004_state_file_carried_on_resume (-before +after):\n%s", diff)
	}
	if after["last_iteration_at"] == nil || len(after["elapsed_per_iteration"].([]any)) != 5 {
		t.Errorf("state file %v, want last_iteration_at and 5 durations", after)
	}
}

// TestSeed004CorruptedState: a corrupted state file is warned about and a
// fresh start made, by a start and by a resume.
func TestSeed004CorruptedState(t *testing.T) {
	for _, args := range [][]string{{"build", "--max-iterations", "2"}, {"resume", "build", "--max-iterations", "2"}} {
		t.Run("seed004_corrupted_state_fresh_start_"+args[0], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			// Leave a resumable state, then damage it.
			cmd, _, _, child := f.hang("build", "--max-iterations", "10")
			cmd.Process.Signal(syscall.SIGINT)
			cmd.Wait()
			waitGone(t, child)
			ckpts, _ := filepath.Glob(filepath.Join(f.stateDir(), "build.*.ckpt"))
			if len(ckpts) == 0 {
				t.Fatal("no checkpoint files")
			}
			for _, c := range ckpts {
				if err := os.WriteFile(c, []byte("not a checkpoint"), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			got := f.run(nil, args...)
			if got.code != exitOK {
				t.Errorf("exit %d, stderr %q", got.code, got.stderr)
			}
			lines := strings.SplitN(normalize(got.stdout), "\n", 2)
			// The same warning whether the engine (a start) or agentloop (a
			// resume) finds the damage.
			if !strings.HasPrefix(lines[0], `[T] WARNING: previous checkpoint of session "build" unreadable, starting fresh: checkpoint: corrupt generation `) {
				t.Errorf("first line %q, want the corruption warning", lines[0])
			}
			want := progress(slices.Concat(
				[]string{"Starting procedure: build (max 2 iterations)"},
				iterationLines(1, 2, 2),
				[]string{"Reached max iterations: 2 (total: D)"})...)
			if len(lines) < 2 || lines[1] != want {
				t.Errorf("after the warning (-want +got):\n%s", cmp.Diff(want, lines[len(lines)-1]))
			}
			// The damaged generations stayed quarantined, and warned about,
			// until the clean stop removed the session's files (cleanup).
			if left, _ := filepath.Glob(filepath.Join(f.stateDir(), "build.*ckpt*")); len(left) != 0 {
				t.Errorf("files left after the clean stop: %q", left)
			}
		})
	}
}

// TestSeed004QualityGates: a failing gate counts as an iteration failure;
// gates run only after a successful AI CLI; without gates only the exit
// status matters (the other tests).
func TestSeed004QualityGates(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		config string
	}{
		{name: "seed004_gate_failure_counts_as_failure_flag", args: []string{"--gate", `echo gate $AGENTLOOP_ITERATION >>"$GATE_LOG"`, "--gate", `test "$AGENTLOOP_ITERATION" != 2`}},
		{name: "seed004_gate_failure_counts_as_failure_config", config: `{"procedures": {"build": {"gates": ["echo gate $AGENTLOOP_ITERATION >>\"$GATE_LOG\"", "test \"$AGENTLOOP_ITERATION\" != 2"]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			if tt.config != "" {
				f.writeConfig(filepath.Join(f.ws, ".agentloop", "config.json"), tt.config)
			}
			gateLog := filepath.Join(f.aux, "gates.log")
			got := f.run(map[string]string{"FAKEAI_FAIL_ON": "3", "GATE_LOG": gateLog}, append([]string{"build", "--max-iterations", "4"}, tt.args...)...)
			want := progress(slices.Concat(
				[]string{"Starting procedure: build (max 4 iterations)"},
				iterationLines(1, 1, 4),
				[]string{
					"Iteration 2/4 starting...",
					`WARNING: Quality gates failed: test "$AGENTLOOP_ITERATION" != 2 (exit 1), consecutive failures: 1/3`,
					"Iteration 2/4 completed in D",
					"Iteration 3/4 starting...",
					"WARNING: AI CLI failed (exit 1), consecutive failures: 2/3",
					"Iteration 3/4 completed in D",
				},
				iterationLines(4, 4, 4),
				[]string{"Reached max iterations: 4 (total: D)"})...)
			checkRun(t, got, exitOK, want)
			data, _ := os.ReadFile(gateLog)
			if diff := cmp.Diff("gate 1\ngate 2\ngate 4\n", string(data)); diff != "" {
				t.Errorf("gates run (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSeed004TokenBudgetWarning: a prompt over the token budget is warned
// about each iteration, before the AI CLI runs (seed 004: warn, then
// execute), and sent anyway.
func TestSeed004TokenBudgetWarning(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	logFile := filepath.Join(f.aux, "agentloop.log")
	got := f.run(map[string]string{"FAKEAI_ECHO": "1"}, "build", "--max-iterations", "2", "--token-budget", "50", "--log", logFile)
	msg := fmt.Sprintf("Prompt exceeds token budget: %d > 50", budget.EstimateTokens(wantPrompt))
	want := progress("Starting procedure: build (max 2 iterations)",
		"Iteration 1/2 starting...", "WARNING: "+msg) +
		"fakeai: working on iteration 1\n" +
		progress("Iteration 1/2 completed in D",
			"Iteration 2/2 starting...", "WARNING: "+msg) +
		"fakeai: working on iteration 2\n" +
		progress("Iteration 2/2 completed in D",
			"Reached max iterations: 2 (total: D)")
	checkRun(t, got, exitOK, want)
	if n := len(f.calls()); n != 2 {
		t.Errorf("%d AI CLI calls, want 2", n)
	}

	// seed004_token_budget_warning_logged: a warn-level entry per iteration.
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Level     string  `json:"level"`
		Msg       string  `json:"msg"`
		Iteration float64 `json:"iteration"`
	}
	var warnings, order []entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if e.Level == "warn" {
			warnings = append(warnings, e)
		}
		if e.Level == "warn" || e.Msg == "AI CLI finished" {
			order = append(order, e)
		}
	}
	wantWarnings := []entry{{"warn", msg, 1}, {"warn", msg, 2}}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("warnings logged (-want +got):\n%s", diff)
	}
	// seed004_token_budget_warning_before_execution: logged before the AI
	// CLI's entry of the same iteration.
	wantOrder := []entry{{"warn", msg, 1}, {"info", "AI CLI finished", 1}, {"warn", msg, 2}, {"info", "AI CLI finished", 2}}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Errorf("log order (-want +got):\n%s", diff)
	}
}

// TestSeed004ConfigPrecedence drives the binary through the layers: flag >
// environment > workspace config > global config > default, procedure
// config before the file's top level. (TestResolve covers every field.)
func TestSeed004ConfigPrecedence(t *testing.T) {
	tests := []struct {
		name            string
		args            []string
		env             map[string]string
		workspace       string
		global          string
		wantStart       string // first progress line
		wantFailures    string // the threshold in "consecutive failures: 1/N"
		wantCalls       int
		wantDryRunAICmd string
	}{
		{name: "seed004_default_unlimited_threshold_3", wantStart: "Starting procedure: build (unlimited iterations)", wantFailures: "1/3", wantCalls: 3},
		{name: "seed004_global_config", global: `{"max_iterations": 2, "failure_threshold": 5, "ai_cmd": "BASH"}`, wantStart: "Starting procedure: build (max 2 iterations)", wantFailures: "1/5", wantCalls: 2},
		{name: "seed004_procedure_config_first", global: `{"max_iterations": 2, "procedures": {"build": {"max_iterations": 4}}}`, wantStart: "Starting procedure: build (max 4 iterations)", wantFailures: "1/3", wantCalls: 3},
		{name: "seed004_workspace_over_global", workspace: `{"max_iterations": 1}`, global: `{"max_iterations": 2, "failure_threshold": 1}`, wantStart: "Starting procedure: build (max 1 iterations)", wantFailures: "1/1", wantCalls: 1},
		{name: "seed004_env_over_workspace", env: map[string]string{"AGENTLOOP_MAX_ITERATIONS": "2", "AGENTLOOP_FAILURE_THRESHOLD": "4"}, workspace: `{"procedures": {"build": {"max_iterations": 1, "failure_threshold": 1}}}`, wantStart: "Starting procedure: build (max 2 iterations)", wantFailures: "1/4", wantCalls: 2},
		{name: "seed004_flag_over_env", args: []string{"--max-iterations", "0", "--failure-threshold", "2"}, env: map[string]string{"AGENTLOOP_MAX_ITERATIONS": "1"}, wantStart: "Starting procedure: build (unlimited iterations)", wantFailures: "1/2", wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			if tt.workspace != "" {
				f.writeConfig(filepath.Join(f.ws, ".agentloop", "config.json"), tt.workspace)
			}
			if tt.global != "" {
				f.writeConfig(f.env["AGENTLOOP_GLOBAL_CONFIG"], strings.ReplaceAll(tt.global, "BASH", f.env["AGENTLOOP_AI_CMD"]))
				if strings.Contains(tt.global, "ai_cmd") {
					delete(f.env, "AGENTLOOP_AI_CMD")
				}
			}
			env := map[string]string{"FAKEAI_FAIL_ON": "1 2 3 4 5 6"}
			for k, v := range tt.env {
				env[k] = v
			}
			got := f.run(env, append([]string{"build"}, tt.args...)...)
			lines := strings.Split(normalize(got.stdout), "\n")
			if lines[0] != "[T] "+tt.wantStart {
				t.Errorf("first line %q, want %q", lines[0], tt.wantStart)
			}
			if len(lines) < 3 || !strings.HasSuffix(lines[2], "consecutive failures: "+tt.wantFailures) {
				t.Errorf("output does not show the threshold %s:\n%s", tt.wantFailures, got.stdout)
			}
			if n := len(f.calls()); n != tt.wantCalls {
				t.Errorf("%d AI CLI calls, want %d", n, tt.wantCalls)
			}
		})
	}

	t.Run("seed004_ai_cmd_flag_env_workspace_global", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.writeConfig(f.env["AGENTLOOP_GLOBAL_CONFIG"], `{"ai_cmd": "global-ai"}`)
		delete(f.env, "AGENTLOOP_AI_CMD")
		wouldRun := func(env map[string]string, args ...string) string {
			res := f.run(env, append([]string{"build", "--dry-run"}, args...)...)
			return strings.SplitN(res.stdout, "\n", 3)[1]
		}
		steps := []string{wouldRun(nil)}
		f.writeConfig(filepath.Join(f.ws, ".agentloop", "config.json"), `{"ai_cmd": "workspace-ai"}`)
		steps = append(steps, wouldRun(nil))
		f.writeConfig(filepath.Join(f.ws, ".agentloop", "config.json"), `{"ai_cmd": "workspace-ai", "procedures": {"build": {"ai_cmd": "procedure-ai"}}}`)
		steps = append(steps, wouldRun(nil))
		steps = append(steps, wouldRun(map[string]string{"AGENTLOOP_AI_CMD": "env-ai"}))
		steps = append(steps, wouldRun(map[string]string{"AGENTLOOP_AI_CMD": "env-ai"}, "--ai-cmd", "flag-ai"))
		want := []string{
			"[DRY RUN] Would execute with: global-ai",
			"[DRY RUN] Would execute with: workspace-ai",
			"[DRY RUN] Would execute with: procedure-ai",
			"[DRY RUN] Would execute with: env-ai",
			"[DRY RUN] Would execute with: flag-ai",
		}
		if diff := cmp.Diff(want, steps); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

// TestSeed004PersistenceFailure: state that cannot be written is warned
// about and the loop goes on (best effort).
func TestSeed004PersistenceFailure(t *testing.T) {
	t.Run("seed004_disk_full_state_dir_unusable", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		// .agentloop is a file: the state directory cannot be created.
		if err := os.WriteFile(filepath.Join(f.ws, ".agentloop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		got := f.run(nil, "build", "--max-iterations", "2")
		lines := strings.SplitN(normalize(got.stdout), "\n", 2)
		if !strings.HasPrefix(lines[0], "[T] WARNING: state cannot be persisted (") || !strings.HasSuffix(lines[0], "); continuing without resume support") {
			t.Errorf("first line %q, want a persistence warning", lines[0])
		}
		want := progress(slices.Concat(
			[]string{"Starting procedure: build (max 2 iterations)"},
			iterationLines(1, 2, 2),
			[]string{"Reached max iterations: 2 (total: D)"})...)
		if len(lines) < 2 || lines[1] != want {
			t.Errorf("after the warning (-want +got):\n%s", cmp.Diff(want, lines[len(lines)-1]))
		}
		if got.code != exitOK {
			t.Errorf("exit %d, stderr %q", got.code, got.stderr)
		}
	})

	t.Run("seed004_disk_full_checkpoint_not_saved", func(t *testing.T) {
		t.Parallel()
		f := readOnlyStateFixture(t)
		got := f.run(nil, "build", "--max-iterations", "2")
		var warnings []string
		var rest []string
		for _, l := range strings.SplitAfter(normalize(got.stdout), "\n") {
			if strings.HasPrefix(l, "[T] WARNING: checkpoint of session \"build\" not saved: ") {
				warnings = append(warnings, l)
			} else if l != "" {
				rest = append(rest, l)
			}
		}
		if len(warnings) != 3 { // two iterations and the stop
			t.Errorf("got %d save warnings, want 3:\n%s", len(warnings), got.stdout)
		}
		want := progress(slices.Concat(
			[]string{"Starting procedure: build (max 2 iterations)"},
			iterationLines(1, 2, 2),
			[]string{"Reached max iterations: 2 (total: D)"})...)
		if diff := cmp.Diff(want, strings.Join(rest, "")); diff != "" {
			t.Errorf("progress (-want +got):\n%s", diff)
		}
		if got.code != exitOK {
			t.Errorf("exit %d, stderr %q", got.code, got.stderr)
		}
	})
}

// runAs makes the fixture run the binary and the fake AI CLI with the
// credentials cred. Both are copied into the fixture's auxiliary directory
// first: the user may not be able to reach the originals (a clone in a
// 0700 directory, a test binary in a private temporary directory).
func (f *fixture) runAs(cred *syscall.Credential) {
	f.t.Helper()
	f.bin = filepath.Join(f.aux, "agentloop")
	fake := filepath.Join(f.aux, "fakeai.sh")
	for from, to := range map[string]string{binary: f.bin, filepath.Join("testdata", "fakeai.sh"): fake} {
		data, err := os.ReadFile(from)
		if err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o755); err != nil {
			f.t.Fatal(err)
		}
	}
	f.env["AGENTLOOP_AI_CMD"] = "bash " + fake
	f.cred = cred
}

// readOnlyStateFixture returns a fixture whose state directory exists but
// cannot be written (its lock file can), made so for root too by running
// the binary as nobody.
func readOnlyStateFixture(t *testing.T) *fixture {
	t.Helper()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	open := func() string {
		d, err := os.MkdirTemp("", "agentloop-ro-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
		return d
	}
	ws, aux := open(), open()
	f := newFixtureIn(t, ws, aux)
	if cred != nil {
		f.runAs(cred)
	}
	state := f.stateDir()
	if err := os.MkdirAll(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "build.lock"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(state, "build.lock"), 0o666)
	if err := os.Chmod(state, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Chmod(state, 0o755)
		os.RemoveAll(ws)
		os.RemoveAll(aux)
	})
	return f
}

// TestSeed004InterruptWithoutSavedState: the interruption line says whether
// the state was saved. Without persistence (warned about at the start) it
// is a plain "Interrupted."; a final checkpoint that cannot be written is
// named with its error.
func TestSeed004InterruptWithoutSavedState(t *testing.T) {
	tests := []struct {
		name     string
		fixture  func(t *testing.T) *fixture
		wantLast *regexp.Regexp
	}{
		{
			name: "seed004_interrupt_state_persistence_unavailable",
			fixture: func(t *testing.T) *fixture {
				f := newFixture(t)
				// .agentloop is a file: the state directory cannot be created.
				if err := os.WriteFile(filepath.Join(f.ws, ".agentloop"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				return f
			},
			wantLast: regexp.MustCompile(`^\[T\] Interrupted\.$`),
		},
		{
			name:     "seed004_interrupt_disk_full_state_not_saved",
			fixture:  readOnlyStateFixture,
			wantLast: regexp.MustCompile(`^\[T\] Interrupted\. State not saved: checkpoint: saving session "build": .*: permission denied$`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.fixture(t)
			cmd, stdout, stderr, child := f.hang("build", "--max-iterations", "10")
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("interrupted run: %v, want exit code 130; stderr %s", err, stderr)
			}
			waitGone(t, child)
			lines := strings.Split(strings.TrimSuffix(normalize(stdout.String()), "\n"), "\n")
			if last := lines[len(lines)-1]; !tt.wantLast.MatchString(last) {
				t.Errorf("last line %q, want a match of %s\nstdout:\n%s", last, tt.wantLast, stdout)
			}
			// Between them, only the warning about the final save.
			lines = slices.DeleteFunc(lines, func(l string) bool {
				return strings.HasPrefix(l, `[T] WARNING: checkpoint of session "build" not saved: `)
			})
			if i := slices.Index(lines, "[T] Iteration 6/10 starting..."); i < 0 || i != len(lines)-2 {
				t.Errorf("the interruption does not follow iteration 6's start:\n%s", stdout)
			}
		})
	}
}

// TestSeed004StructuredLogs: --log writes JSON lines with the iteration,
// phase, duration and outcome of every iteration.
func TestSeed004StructuredLogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	logFile := filepath.Join(f.aux, "agentloop.log")
	got := f.run(map[string]string{"FAKEAI_FAIL_ON": "2", "FAKEAI_ECHO": "1"}, "build", "--max-iterations", "2", "--log", logFile)
	if got.code != exitOK {
		t.Fatalf("exit %d, stderr %q", got.code, got.stderr)
	}
	// The AI CLI's output passes through.
	if !strings.Contains(got.stdout, "Iteration 1/2 starting...\nfakeai: working on iteration 1\n") {
		t.Errorf("the AI CLI's output is missing:\n%s", got.stdout)
	}

	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Msg       string  `json:"msg"`
		Procedure string  `json:"procedure"`
		Iteration float64 `json:"iteration"`
		Phase     string  `json:"phase"`
		Outcome   string  `json:"outcome"`
		ExitCode  *int    `json:"exit_code"`
		Duration  string  `json:"duration"`
	}
	var gotEntries []entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if e.Phase == "" || e.Phase == "plan" || e.Phase == "execute" {
			continue
		}
		if _, err := time.ParseDuration(e.Duration); err != nil {
			t.Errorf("%s: duration %q: %v", e.Msg, e.Duration, err)
		}
		e.Duration = ""
		gotEntries = append(gotEntries, e)
	}
	zero, one := 0, 1
	want := []entry{
		{Msg: "prompt assembled", Procedure: "build", Iteration: 1, Phase: "prompt", Outcome: "within_budget"},
		{Msg: "AI CLI finished", Procedure: "build", Iteration: 1, Phase: "ai_cli", Outcome: "succeeded", ExitCode: &zero},
		{Msg: "iteration completed", Procedure: "build", Iteration: 1, Phase: "integrate", Outcome: "succeeded"},
		{Msg: "prompt assembled", Procedure: "build", Iteration: 2, Phase: "prompt", Outcome: "within_budget"},
		{Msg: "AI CLI finished", Procedure: "build", Iteration: 2, Phase: "ai_cli", Outcome: "failed", ExitCode: &one},
		{Msg: "iteration failed", Procedure: "build", Iteration: 2, Phase: "integrate", Outcome: "failed"},
		{Msg: "loop stopped", Procedure: "build", Iteration: 2, Phase: "stop", Outcome: "max_iterations"},
	}
	if diff := cmp.Diff(want, gotEntries); diff != "" {
		t.Errorf("seed004_structured_logging (-want +got):\n%s", diff)
	}
}

// TestUsage: --help explains every flag; bad command lines exit 2; errors
// exit 1.
func TestUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	help := f.run(nil, "--help")
	if help.code != exitOK {
		t.Errorf("--help: exit %d", help.code)
	}
	for _, flag := range []string{"-ai-cmd", "-max-iterations", "-failure-threshold", "-token-budget", "-gate", "-context", "-prompts", "-workspace", "-dry-run", "-fresh", "-log", "-verbose",
		"-ai-timeout", "-json", "-version", "AGENTLOOP_AI_TIMEOUT", "ai_timeout",
		"agentloop resume [flags] <procedure>", "AGENTLOOP_AI_CMD", "AGENTLOOP_GLOBAL_CONFIG", "Exit codes"} {
		if !strings.Contains(help.stdout, flag) {
			t.Errorf("--help does not mention %s", flag)
		}
	}

	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStderr string
	}{
		{"no_procedure", nil, nil, exitUsage, "agentloop: missing the procedure to run, e.g. agentloop build\nRun 'agentloop --help' for usage.\n"},
		{"unknown_flag", []string{"build", "--nope"}, nil, exitUsage, "agentloop: flag provided but not defined: -nope\nRun 'agentloop --help' for usage.\n"},
		{"bad_env", []string{"build"}, map[string]string{"AGENTLOOP_MAX_ITERATIONS": "x"}, exitUsage, "agentloop: AGENTLOOP_MAX_ITERATIONS: \"x\" is not a number\n"},
		{"no_ai_cmd", []string{"build"}, map[string]string{"AGENTLOOP_AI_CMD": ""}, exitUsage, "agentloop: no AI CLI configured: give --ai-cmd, set AGENTLOOP_AI_CMD, or set ai_cmd in .agentloop/config.json\n"},
		{"missing_prompts", []string{"deploy"}, nil, exitError, "agentloop: reading the observe prompt: open PROMPTS/deploy/observe.md: no such file or directory\n"},
		{"resume_without_state", []string{"resume", "build"}, nil, exitError, "agentloop: no saved state of procedure build to resume; start it with: agentloop build\n"},
		{"extra_argument", []string{"build", "now"}, nil, exitUsage, "agentloop: unexpected arguments after procedure \"build\": now\nRun 'agentloop --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.run(tt.env, tt.args...)
			want := strings.ReplaceAll(tt.wantStderr, "PROMPTS", filepath.Join(f.ws, "prompts"))
			if got.code != tt.wantCode {
				t.Errorf("exit code %d, want %d", got.code, tt.wantCode)
			}
			if diff := cmp.Diff(want, got.stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResumeWithSavedSettings: resume continues with the settings of the
// run it resumes, except those its command line gives.
func TestResumeWithSavedSettings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ai := f.env["AGENTLOOP_AI_CMD"]
	delete(f.env, "AGENTLOOP_AI_CMD")
	gateLog := filepath.Join(f.aux, "gates.log")
	f.env["GATE_LOG"] = gateLog
	cmd, _, _, child := f.hang("build", "--max-iterations", "10", "--ai-cmd", ai, "--gate", `echo gate $AGENTLOOP_ITERATION >>"$GATE_LOG"`, "--token-budget", "50")
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	waitGone(t, child)

	got := f.run(map[string]string{"AGENTLOOP_MAX_ITERATIONS": "3", "AGENTLOOP_FAILURE_THRESHOLD": "1", "AGENTLOOP_TOKEN_BUDGET": "99999", "FAKEAI_FAIL_ON": "7"},
		"resume", "build", "--max-iterations", "7")
	warn := fmt.Sprintf("WARNING: Prompt exceeds token budget: %d > 50", budget.EstimateTokens(wantPrompt))
	want := progress(
		"Resuming procedure: build from iteration 5 (max 7)",
		"Previous session: 5 iterations completed in D",
		"Iteration 6/7 starting...", warn, "Iteration 6/7 completed in D",
		"Iteration 7/7 starting...", warn, "WARNING: AI CLI failed (exit 1), consecutive failures: 1/3", "Iteration 7/7 completed in D",
		"Reached max iterations: 7 (total: D)")
	checkRun(t, got, exitOK, want)
	data, _ := os.ReadFile(gateLog)
	if diff := cmp.Diff("gate 1\ngate 2\ngate 3\ngate 4\ngate 5\ngate 6\n", string(data)); diff != "" {
		t.Errorf("gates run (-want +got):\n%s", diff)
	}
}

// TestVersion: --version prints the program's version line, with or
// without a procedure.
func TestVersion(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, args := range [][]string{{"--version"}, {"build", "--version"}} {
		got := f.run(nil, args...)
		if got.code != exitOK || !strings.HasPrefix(got.stdout, "agentloop ") || !strings.Contains(got.stdout, "go1.") || got.stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, got.code, got.stdout, got.stderr)
		}
	}
	if calls := f.calls(); calls != nil {
		t.Errorf("the AI CLI ran: %q", calls)
	}
}

// TestJSONResult: --json writes only the final result to stdout; the
// progress lines and the AI CLI's output go to stderr.
func TestJSONResult(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		want     map[string]any
	}{
		{
			name: "completed", env: map[string]string{"FAKEAI_ECHO": "1"}, args: []string{"build", "--max-iterations", "2"}, wantCode: exitOK,
			want: map[string]any{"status": "max_iterations", "iterations": 2.0, "succeeded": 2.0, "exit_code": 0.0},
		},
		{
			name: "every_iteration_failed", env: map[string]string{"FAKEAI_FAIL_ON": "1"}, args: []string{"build", "--max-iterations", "1"}, wantCode: exitError,
			want: map[string]any{"status": "max_iterations", "iterations": 1.0, "succeeded": 0.0, "exit_code": 1.0,
				"last_error": "AI CLI failed (exit 1): fakeai: failing iteration 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			got := f.run(tt.env, append(tt.args, "--json")...)
			if got.code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", got.code, tt.wantCode, got.stderr)
			}
			var r map[string]any
			if err := json.Unmarshal([]byte(got.stdout), &r); err != nil || strings.Count(got.stdout, "\n") != 1 {
				t.Fatalf("stdout is not one JSON line (%v):\n%s", err, got.stdout)
			}
			usage, _ := r["usage"].(map[string]any)
			if tokens, _ := usage["tokens"].(float64); tokens <= 0 {
				t.Errorf("usage %v, want tokens", r["usage"])
			}
			// The reason is the engine's wording: present, not pinned here.
			if reason, _ := r["reason"].(string); reason == "" {
				t.Errorf("no reason in %v", r)
			}
			delete(r, "usage")
			delete(r, "reason")
			if diff := cmp.Diff(tt.want, r); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.stderr, "Starting procedure: build") {
				t.Errorf("stderr lacks the progress:\n%s", got.stderr)
			}
		})
	}
}

// TestDryRunJSON: --dry-run with --json writes what it would run as one
// line of JSON, and runs nothing.
func TestDryRunJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	got := f.run(map[string]string{"AGENTLOOP_AI_CMD": "claude -p"}, "build", "--dry-run", "--json", "--token-budget", "50", "--gate", "go test ./...")
	if got.code != exitOK || strings.Count(got.stdout, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and one line", got.code, got.stdout, got.stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(got.stdout), &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"dry_run": true, "procedure": "build", "ai_cmd": "claude -p", "gates": []any{"go test ./..."},
		"tokens": float64(budget.EstimateTokens(wantPrompt)), "token_budget": 50.0, "over_budget": true, "prompt": wantPrompt}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if calls := f.calls(); calls != nil {
		t.Errorf("the AI CLI ran: %q", calls)
	}
}
