//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// useFakeCLI makes the fixture's AI CLI testdata/fakecli.sh, which prints
// the sample outputs of real AI CLIs.
func (f *fixture) useFakeCLI() {
	f.t.Helper()
	fake, err := filepath.Abs(filepath.Join("testdata", "fakecli.sh"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.env["AGENTLOOP_AI_CMD"] = "sh " + fake
}

// jsonResult runs the binary with --json and decodes its one line.
func (f *fixture) jsonResult(env map[string]string, args ...string) (finalResult, result) {
	f.t.Helper()
	got := f.run(env, append(args, "--json")...)
	var r finalResult
	if err := json.Unmarshal([]byte(got.stdout), &r); err != nil || strings.Count(got.stdout, "\n") != 1 {
		f.t.Fatalf("stdout is not one JSON line (%v): %q; stderr:\n%s", err, got.stdout, got.stderr)
	}
	return r, got
}

// TestRealSpend: the tokens and cost an AI CLI reports are charged to the
// loop, input and output apart, and --max-cost and --max-tokens stop the
// loop by them (budget_exhausted, exit 0) before an iteration would exceed
// them; output agentloop cannot read is charged the prompt's estimate.
func TestRealSpend(t *testing.T) {
	const claudeIn, claudeOut, claudeCost = 31 + 18342 + 120517, 2874, 0.18420315
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		wantIter  int
		status    string
		in, out   int64
		cost      float64
		reasonHas string
	}{
		{name: "claude_max_cost", env: map[string]string{"FAKECLI_OUTPUT": "claude.json"},
			args: []string{"--max-cost", "0.5", "--max-iterations", "10"}, wantIter: 2, status: "budget_exhausted",
			in: 2 * claudeIn, out: 2 * claudeOut, cost: 2 * claudeCost, reasonHas: "cost"},
		{name: "claude_flag_format", env: map[string]string{"FAKECLI_OUTPUT": "claude-stream.jsonl"},
			args: []string{"--ai-output", "claude", "--max-iterations", "2"}, wantIter: 2, status: "max_iterations",
			in: 2 * (12 + 6120 + 40210), out: 2 * 911, cost: 2 * 0.0513},
		{name: "codex_max_tokens", env: map[string]string{"FAKECLI_OUTPUT": "codex.jsonl", "AGENTLOOP_MAX_TOKENS": "60000"},
			args: []string{"--max-iterations", "10"}, wantIter: 2, status: "budget_exhausted",
			in: 2 * 24763, out: 2 * 1122, reasonHas: "token"},
		{name: "gemini_sniffed", env: map[string]string{"FAKECLI_OUTPUT": "gemini.json"},
			args: []string{"--max-iterations", "1"}, wantIter: 1, status: "max_iterations",
			in: 24939 + 500 + 1200, out: 20 + 154 + 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.useFakeCLI()
			r, got := f.jsonResult(tt.env, append([]string{"build"}, tt.args...)...)
			if r.ExitCode != exitOK || got.code != exitOK || r.Status != tt.status || r.Iterations != tt.wantIter {
				t.Errorf("result %+v (exit %d), want %s after %d iterations; stderr:\n%s", r, got.code, tt.status, tt.wantIter, got.stderr)
			}
			u := r.Usage
			if u.InputTokens != tt.in || u.OutputTokens != tt.out || u.Tokens != tt.in+tt.out || math.Abs(u.CostUSD-tt.cost) > 1e-9 {
				t.Errorf("usage %+v, want %d in, %d out, $%v", u, tt.in, tt.out, tt.cost)
			}
			if !strings.Contains(r.Reason, tt.reasonHas) {
				t.Errorf("reason %q, want it to name %q", r.Reason, tt.reasonHas)
			}
			if tt.status == "budget_exhausted" && !strings.Contains(got.stderr, "Budget exhausted") {
				t.Errorf("progress lacks the stop:\n%s", got.stderr)
			}
			// The AI CLI's output still reaches the user.
			if !strings.Contains(got.stderr, read(t, tt.env["FAKECLI_OUTPUT"])) {
				t.Errorf("stderr lacks the AI CLI's output:\n%s", got.stderr)
			}
		})
	}

	t.Run("plain_text_charged_the_estimate", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.useFakeCLI()
		r, _ := f.jsonResult(map[string]string{"FAKECLI_OUTPUT": "plain.txt"}, "build", "--max-iterations", "2")
		if r.Usage.CostUSD != 0 || r.Usage.OutputTokens != 0 || r.Usage.InputTokens != r.Usage.Tokens || r.Usage.Tokens <= 0 {
			t.Errorf("usage %+v, want the prompts' estimates as input", r.Usage)
		}
	})

	// The estimate of the next iteration is the mean of those before: one
	// call of $0.18 under a limit of $0.30 leaves no room for a second.
	t.Run("max_cost_stops_before_exceeding", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.useFakeCLI()
		r, _ := f.jsonResult(map[string]string{"FAKECLI_OUTPUT": "claude.json"}, "build", "--max-cost", "0.3", "--max-iterations", "5")
		if r.Status != "budget_exhausted" || r.Iterations != 1 || r.Usage.CostUSD > 0.3 {
			t.Errorf("result %+v, want budget_exhausted after 1 iteration", r)
		}
	})
}

// TestFailedRunSpendAndReason (issue 32): a run that fails or is stopped
// is charged what the AI CLI reported before its end, nothing when it never
// reached the model, the prompt's estimate only when the output does not
// say; last_error carries the CLI's own reason; the AI timeout (30 minutes
// by default) and --max-time stop an AI CLI that waits forever.
func TestFailedRunSpendAndReason(t *testing.T) {
	const reconnecting = "Reconnecting... 2/5 (stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses))"
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		in, out   int64 // -1: the prompt's estimate, as input
		lastError string
	}{
		// Catches charging only a result line that never came.
		{name: "claude_stream_interrupted", env: map[string]string{"FAKECLI_OUTPUT": "claude-stream-interrupted.jsonl", "FAKECLI_EXIT": "143"},
			in: (4 + 21034) + (6 + 412 + 21034), out: 96 + 187, lastError: "AI CLI failed (exit 143)"},
		// Catches charging the estimate for a run that spent nothing, and
		// a last_error without the CLI's reason.
		{name: "claude_not_logged_in", env: map[string]string{"FAKECLI_OUTPUT": "claude-not-logged-in.json", "FAKECLI_EXIT": "1"},
			lastError: "AI CLI failed (exit 1): Not logged in · Please run /login"},
		{name: "gemini_stream_error", env: map[string]string{"FAKECLI_OUTPUT": "gemini-stream-error.jsonl", "FAKECLI_EXIT": "1"},
			lastError: "AI CLI failed (exit 1): [API Error: exception TypeError: fetch failed sending request]"},
		// Gemini's --output-format json error: on stderr, without stats.
		{name: "gemini_json_error_on_stderr", env: map[string]string{"FAKECLI_OUTPUT": "-", "FAKECLI_STDERR": "gemini-error.stderr", "FAKECLI_EXIT": "41"},
			in: -1, lastError: "AI CLI failed (exit 41): Please set an Auth method in your /root/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA"},
		{name: "command_not_found", env: map[string]string{"AGENTLOOP_AI_CMD": "no-such-ai-cli-32"},
			lastError: "AI CLI failed (exit 127): sh: 1: no-such-ai-cli-32: not found"},
		// Codex offline waits forever: the AI timeout stops it.
		{name: "codex_offline_ai_timeout", env: map[string]string{"FAKECLI_OUTPUT": "codex-offline.jsonl", "FAKECLI_HANG": "1"},
			args: []string{"--ai-timeout", "5s"}, lastError: "AI CLI failed (timed out after 5s): " + reconnecting},
		// Catches a --max-time that does not stop a running AI CLI.
		{name: "codex_offline_max_time", env: map[string]string{"FAKECLI_OUTPUT": "codex-offline.jsonl", "FAKECLI_HANG": "1"},
			args: []string{"--ai-timeout", "0", "--max-time", "5s"}, lastError: "AI CLI failed (stopped at the time limit (5s)): " + reconnecting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.useFakeCLI()
			r, got := f.jsonResult(tt.env, append([]string{"build", "--max-iterations", "1"}, tt.args...)...)
			ok := r.LastError == tt.lastError
			switch tt.name {
			case "command_not_found": // the shell's wording varies
				ok = strings.HasPrefix(r.LastError, "AI CLI failed (exit 127): ") && strings.Contains(r.LastError, "no-such-ai-cli-32")
			case "codex_offline_max_time": // the engine's own wall-time stop may come first
				ok = ok || strings.Contains(r.LastError, "wall-time budget ran out")
			}
			if !ok {
				t.Errorf("last_error %q, want %q; stderr:\n%s", r.LastError, tt.lastError, got.stderr)
			}
			u := r.Usage
			switch {
			case tt.in == -1:
				if u.InputTokens <= 0 || u.OutputTokens != 0 || u.Tokens != u.InputTokens {
					t.Errorf("usage %+v, want the prompt's estimate as input", u)
				}
			case u.InputTokens != tt.in || u.OutputTokens != tt.out || u.Tokens != tt.in+tt.out:
				t.Errorf("usage %+v, want %d in, %d out", u, tt.in, tt.out)
			}
		})
	}
}

// TestCompletionSignal: the AI CLI says the work is done with the
// completion marker in its answer, or by writing the completion file; the
// loop then converges (exit 0, its state removed) with the marker or file
// named in the reason. A marker from an iteration whose gate fails does
// not count; a completion file left from before is removed before the AI
// CLI runs, so a stale one does not count either.
func TestCompletionSignal(t *testing.T) {
	const marker = "<promise>COMPLETE</promise>"
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		setup     func(f *fixture)
		wantIter  int
		status    string
		reasonHas string
	}{
		{name: "marker_on_iteration_2", env: map[string]string{"FAKECLI_OUTPUT": "claude-stream.jsonl", "FAKECLI_OUTPUT_2": "claude.json"},
			args: []string{"--done-marker", marker}, wantIter: 2, status: "converged", reasonHas: `completion marker "` + marker + `"`},
		{name: "marker_from_env_in_raw_text", env: map[string]string{"FAKECLI_OUTPUT": "plain.txt", "AGENTLOOP_DONE_MARKER": "the missing handler"},
			wantIter: 1, status: "converged", reasonHas: `completion marker "the missing handler"`},
		{name: "marker_with_failing_gate_ignored", env: map[string]string{"FAKECLI_OUTPUT": "claude.json"},
			args: []string{"--done-marker", marker, "--gate", `test "$AGENTLOOP_ITERATION" != 1`}, wantIter: 2, status: "converged",
			reasonHas: "completion marker"},
		{name: "marker_absent", env: map[string]string{"FAKECLI_OUTPUT": "codex.jsonl"},
			args: []string{"--done-marker", marker, "--max-iterations", "2"}, wantIter: 2, status: "max_iterations"},
		{name: "done_file_on_iteration_3", env: map[string]string{"FAKECLI_OUTPUT": "plain.txt", "FAKECLI_DONE_FILE_ON": "3"},
			args: []string{"--done-file", "DONE"}, wantIter: 3, status: "converged", reasonHas: "completion file "},
		{name: "stale_done_file_removed", env: map[string]string{"FAKECLI_OUTPUT": "plain.txt"},
			setup: func(f *fixture) { writeFile(f.t, filepath.Join(f.ws, "DONE"), "old") },
			args:  []string{"--done-file", "DONE", "--max-iterations", "2"}, wantIter: 2, status: "max_iterations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.useFakeCLI()
			if tt.setup != nil {
				tt.setup(f)
			}
			r, got := f.jsonResult(tt.env, append([]string{"build", "--max-iterations", "5"}, tt.args...)...)
			if got.code != exitOK || r.Status != tt.status || r.Iterations != tt.wantIter || !strings.Contains(r.Reason, tt.reasonHas) {
				t.Errorf("result %+v (exit %d), want %s after %d iterations, reason with %q; stderr:\n%s",
					r, got.code, tt.status, tt.wantIter, tt.reasonHas, got.stderr)
			}
			if tt.status == "converged" {
				if !strings.Contains(got.stderr, "Work complete: the AI CLI ") {
					t.Errorf("progress lacks the convergence:\n%s", got.stderr)
				}
				if left := f.stateFiles(); len(left) != 0 {
					t.Errorf("state left after convergence: %q", left)
				}
			}
		})
	}

	// A completion file that is a link is neither removed nor followed.
	t.Run("done_file_link_refused", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.useFakeCLI()
		target := filepath.Join(f.aux, "target")
		writeFile(t, target, "keep")
		if err := os.Symlink(target, filepath.Join(f.ws, "DONE")); err != nil {
			t.Fatal(err)
		}
		r, got := f.jsonResult(nil, "build", "--done-file", "DONE", "--max-iterations", "1")
		if r.Status == "converged" || !strings.Contains(r.LastError, "is not a regular file") {
			t.Errorf("result %+v; stderr:\n%s", r, got.stderr)
		}
		if data, err := os.ReadFile(target); err != nil || string(data) != "keep" {
			t.Errorf("link target: %q, %v", data, err)
		}
	})
}

// TestGateTimeout: a quality gate that exceeds --gate-timeout (or
// AGENTLOOP_GATE_TIMEOUT, or gate_timeout in the config) is stopped, its
// children with it, and fails the iteration, saying so.
func TestGateTimeout(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		config string
	}{
		{name: "flag", args: []string{"--gate-timeout", "2s"}},
		{name: "env", env: map[string]string{"AGENTLOOP_GATE_TIMEOUT": "2s"}},
		{name: "config", config: `{"gate_timeout": "2s"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			if tt.config != "" {
				f.writeConfig(filepath.Join(f.ws, ".agentloop", "config.json"), tt.config)
			}
			pidFile := filepath.Join(f.aux, "gate-child.pid")
			gate := `sleep 1000 & echo $! >"` + pidFile + `"; wait`
			got := f.run(tt.env, append([]string{"build", "--max-iterations", "1", "--gate", gate}, tt.args...)...)
			want := `WARNING: Quality gates failed: ` + gate + ` (timed out after 2s), consecutive failures: 1/3`
			if got.code != exitError || !strings.Contains(got.stdout, want) {
				t.Errorf("exit %d, stdout:\n%s\nwant a line with %q; stderr:\n%s", got.code, got.stdout, want, got.stderr)
			}
			// On a loaded machine the limit may stop the gate before it
			// started its child: then there is no child to outlive it.
			data, err := os.ReadFile(pidFile)
			if errors.Is(err, fs.ErrNotExist) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
				waitGone(t, pid)
			}
		})
	}
}

// TestSecondInterruptNamesTheGate: the acknowledgement of a second
// interrupt names what runs, here a quality gate that ignores SIGTERM, not
// "the AI CLI"; the gate's group is killed and the state saved.
func TestSecondInterruptNamesTheGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	marker := filepath.Join(f.aux, "gate-running")
	term := filepath.Join(f.aux, "gate-got-term")
	// The gate outlives SIGTERM (it notes it), its child too.
	gate := `trap ': >"` + term + `"' TERM; (trap '' TERM; exec sleep 1000) & : >"` + marker + `"; until wait; do :; done`
	cmd := f.command(nil, "build", "--max-iterations", "3", "--gate", gate)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, marker, cmd, &stdout)
	cmd.Process.Signal(syscall.SIGINT)
	// The first interrupt has reached the gate (SIGTERM): the second one
	// cannot merge with it.
	waitFor(t, term, cmd, &stdout)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !asExit(err, &ee) {
		t.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Errorf("exit %d, want %d", code, exitInterrupted)
	}
	want := `agentloop: interrupted again: stopping the quality gate ` + strconv.Quote(gate) + ` at once; the state is saved before exit`
	if !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "stopping the AI CLI") {
		t.Errorf("stderr:\n%s\nwant %q", stderr.String(), want)
	}
	if !strings.Contains(stdout.String(), "Interrupted. State saved.") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

// TestGitRecording: with --git commit each iteration's changes are a
// commit whose message names the iteration and its outcome, .agentloop/
// left out; with --git stash a snapshot per iteration goes on the stash
// list and the workspace is left as it is; a workspace outside git is a
// usage error; without --git nothing is recorded.
func TestGitRecording(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	gitEnv := map[string]string{
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.DevNull, "FAKECLI_OUTPUT": "plain.txt", "FAKECLI_TOUCH": "work.txt",
	}
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		f.useFakeCLI()
		for k, v := range gitEnv {
			f.env[k] = v
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "prompts"}, {"commit", "-q", "-m", "start"}} {
			gitIn(t, f, args...)
		}
		return f
	}
	t.Run("commit", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		got := f.run(map[string]string{"FAKEAI_FAIL_ON": ""}, "build", "--max-iterations", "3", "--git", "commit",
			"--gate", `test "$AGENTLOOP_ITERATION" != 2`)
		if got.code != exitOK {
			t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", got.code, got.stdout, got.stderr)
		}
		log := gitIn(t, f, "log", "--format=%s")
		want := "agentloop build: iteration 3 (succeeded)\n" +
			"agentloop build: iteration 2 (failed: Quality gates failed: test \"$AGENTLOOP_ITERATION\" != 2 (exit 1))\n" +
			"agentloop build: iteration 1 (succeeded)\nstart\n"
		if log != want {
			t.Errorf("git log:\n%s\nwant:\n%s", log, want)
		}
		if files := gitIn(t, f, "ls-files"); strings.Contains(files, ".agentloop") {
			t.Errorf(".agentloop committed:\n%s", files)
		}
		if diff := gitIn(t, f, "show", "--format=", "HEAD~1", "--", "work.txt"); !strings.Contains(diff, "+iteration 2") {
			t.Errorf("iteration 2's change not in its commit:\n%s", diff)
		}
	})
	t.Run("stash", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		got := f.run(nil, "build", "--max-iterations", "2", "--git", "stash")
		if got.code != exitOK {
			t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", got.code, got.stdout, got.stderr)
		}
		list := gitIn(t, f, "stash", "list", "--format=%s")
		if !strings.Contains(list, "agentloop build: iteration 2 (succeeded)") || !strings.Contains(list, "agentloop build: iteration 1 (succeeded)") {
			t.Errorf("stash list:\n%s", list)
		}
		if data, _ := os.ReadFile(filepath.Join(f.ws, "work.txt")); string(data) != "iteration 1\niteration 2\n" {
			t.Errorf("workspace changed: work.txt = %q", data)
		}
		if log := gitIn(t, f, "log", "--format=%s"); log != "start\n" {
			t.Errorf("git log:\n%s", log)
		}
	})
	t.Run("not_a_repository", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.useFakeCLI()
		f.env["GIT_CEILING_DIRECTORIES"] = filepath.Dir(f.ws)
		got := f.run(nil, "build", "--max-iterations", "1", "--git", "commit")
		if got.code != exitUsage || !strings.Contains(got.stderr, "is not in a git work tree") || f.calls() != nil {
			t.Errorf("exit %d, stderr %q", got.code, got.stderr)
		}
	})
	t.Run("off_by_default", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		if got := f.run(nil, "build", "--max-iterations", "1"); got.code != exitOK {
			t.Fatalf("exit %d: %s", got.code, got.stderr)
		}
		if log := gitIn(t, f, "log", "--format=%s"); log != "start\n" {
			t.Errorf("git log:\n%s", log)
		}
		if list := gitIn(t, f, "stash", "list"); list != "" {
			t.Errorf("stash list:\n%s", list)
		}
	})
}

// gitIn runs git in the fixture's workspace with its environment.
func gitIn(t *testing.T, f *fixture, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = f.ws
	for k, v := range f.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestSpendingLimitAcrossResume: a resume continues under the spending
// limit of the run it resumes (a setting of the run, like the AI CLI), and
// what was spent before the interruption counts, the interrupted call's
// reported cost included.
func TestSpendingLimitAcrossResume(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake, err := filepath.Abs(filepath.Join("testdata", "fakecli.sh"))
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(f.aux, "hanging")
	// Claude-style output each iteration; iteration 2 of the first run
	// then hangs until interrupted.
	aiCmd := `sh ` + fake + `; if [ "$AGENTLOOP_ITERATION" = 2 ] && [ ! -e "` + marker + `" ]; then : >"` + marker + `"; exec sleep 300; fi`
	delete(f.env, "AGENTLOOP_AI_CMD")
	f.env["FAKECLI_OUTPUT"] = "claude.json"
	cmd := f.command(nil, "build", "--ai-cmd", aiCmd, "--max-cost", "0.5", "--max-iterations", "10")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, marker, cmd, &stdout)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("first run: exit %d\n%s", code, stdout.String())
	}
	// No --max-cost, no --ai-cmd: both come from the saved run. The
	// interrupted call had printed its report: its $0.18 were spent and
	// are counted, so that 1 iteration has cost $0.37 and the next one
	// is expected to cost as much: over the limit, the loop stops.
	r, got := f.jsonResult(nil, "resume", "build")
	if got.code != exitOK || r.Status != "budget_exhausted" || r.Iterations != 1 || math.Abs(r.Usage.CostUSD-2*0.18420315) > 1e-9 {
		t.Errorf("resume: %+v (exit %d)\n%s", r, got.code, got.stderr)
	}
}
