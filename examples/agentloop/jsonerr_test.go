//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestJSONErrorBeforeTheLoop: with --json, stdout holds one line of JSON
// whatever the outcome, also when the loop never starts (resume with no
// state, a missing --context file, missing prompts, no AI CLI) and when the
// command line cannot be parsed (an unknown flag); its "error" says why.
func TestJSONErrorBeforeTheLoop(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		setup     func(f *fixture)
		wantCode  int
		wantError string
	}{
		{name: "resume_without_state", args: []string{"resume", "build"}, wantCode: exitError,
			wantError: "no saved state of procedure build to resume"},
		{name: "missing_context_file", args: []string{"build", "--context", "nope.md"}, wantCode: exitError,
			wantError: "reading a context file"},
		{name: "missing_prompts", args: []string{"build"}, setup: func(f *fixture) { os.RemoveAll(filepath.Join(f.ws, "prompts")) },
			wantCode: exitError, wantError: "reading the observe prompt"},
		{name: "no_ai_cli", env: map[string]string{"AGENTLOOP_AI_CMD": ""}, args: []string{"build"}, wantCode: exitUsage,
			wantError: "no AI CLI configured"},
		{name: "unknown_flag", args: []string{"build", "--bogus"}, wantCode: exitUsage,
			wantError: "flag provided but not defined: -bogus"},
		{name: "unknown_flag_before_json", args: []string{"--bogus", "build"}, wantCode: exitUsage,
			wantError: "flag provided but not defined: -bogus"},
		{name: "bad_value", args: []string{"build", "--max-iterations", "x"}, wantCode: exitUsage,
			wantError: `invalid value "x" for flag -max-iterations`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			got := f.run(tt.env, append(tt.args, "--json")...)
			if got.code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", got.code, tt.wantCode, got.stderr)
			}
			var r finalResult
			if err := json.Unmarshal([]byte(got.stdout), &r); err != nil || strings.Count(got.stdout, "\n") != 1 {
				t.Fatalf("stdout is not one JSON line (%v): %q; stderr:\n%s", err, got.stdout, got.stderr)
			}
			if r.Status != "error" || r.ExitCode != tt.wantCode || !strings.Contains(r.Error, tt.wantError) {
				t.Errorf("result %+v, want status error, exit_code %d and an error with %q", r, tt.wantCode, tt.wantError)
			}
			if !strings.Contains(got.stderr, "agentloop: "+r.Error) {
				t.Errorf("stderr lacks the error line %q:\n%s", r.Error, got.stderr)
			}
		})
	}
	// Without --json, nothing goes to stdout.
	f := newFixture(t)
	if got := f.run(nil, "resume", "build"); got.stdout != "" || got.code != exitError {
		t.Errorf("without --json: exit %d, stdout %q", got.code, got.stdout)
	}
}

// TestResumeDamagedStateWithoutAICLI: a resume whose saved state (which
// held the run's AI CLI) is damaged warns about the damage and says why it
// cannot go on, exit 1, instead of "no AI CLI configured" (exit 2); the
// damaged files are set aside, and the warning says so.
func TestResumeDamagedStateWithoutAICLI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	aiCmd := f.env["AGENTLOOP_AI_CMD"]
	delete(f.env, "AGENTLOOP_AI_CMD")
	cmd, _, _, child := f.hang("build", "--max-iterations", "10", "--ai-cmd", aiCmd)
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
	got := f.run(nil, "resume", "build")
	if got.code != exitError {
		t.Errorf("exit %d, want %d; stderr:\n%s", got.code, exitError, got.stderr)
	}
	if !strings.Contains(got.stdout, `WARNING: previous checkpoint of session "build" unreadable`) {
		t.Errorf("stdout lacks the damage warning:\n%s", got.stdout)
	}
	if !strings.Contains(got.stderr, "cannot resume procedure build: its settings were in the damaged state (set aside as *.corrupt") ||
		strings.Contains(got.stderr, "no AI CLI configured:") {
		t.Errorf("stderr:\n%s", got.stderr)
	}
	if q, _ := filepath.Glob(filepath.Join(f.stateDir(), "build.*.corrupt")); len(q) == 0 {
		t.Errorf("no quarantined files in %v", f.stateFiles())
	}
}
