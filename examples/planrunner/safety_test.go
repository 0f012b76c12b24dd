package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRealFiles covers what keeps a real plan safe: simulation only on
// request, resumes with the run's own settings, one run per plan, output
// locations checked first, and failures said plainly.
func TestRealFiles(t *testing.T) {
	t.Run("no_implementer_is_refused_and_the_plan_kept", func(t *testing.T) {
		path := fixture(t, "single_iteration.md")
		orig, _ := os.ReadFile(path)
		out, err := exec.Command(binary, "--quiet", path).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(string(out), "no implementer: give --implementer-cmd CMD") {
			t.Errorf("err %v, want exit %d\n%s", err, exitUsage, out)
		}
		if now, _ := os.ReadFile(path); string(now) != string(orig) {
			t.Errorf("the plan changed:\n%s", now)
		}
	})

	t.Run("simulate_with_a_command_is_refused", func(t *testing.T) {
		r := runFixture(t, "single_iteration.md", "--simulate", "--implementer-cmd", "true")
		if r.code != exitUsage || !strings.Contains(r.stderr, "cannot be used with --implementer-cmd") {
			t.Errorf("exit %d\n%s", r.code, r.stderr)
		}
	})

	t.Run("resume_refuses_other_settings", func(t *testing.T) {
		path := fixture(t, "stuck.md")
		if r := runOn(t, path, "--max-iterations", "1", "--implementer-cmd", script(t, "impl_fail.sh")); r.code != exitIncomplete {
			t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		orig, _ := os.ReadFile(path)
		for _, args := range [][]string{
			{"--resume", "--simulate"},
			{"--resume", "--implementer-cmd", script(t, "impl_ok.sh")},
			{"--resume", "--parallel", "1"},
		} {
			r := runOn(t, path, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "the run being resumed has") || !strings.Contains(r.stderr, "run without --resume to start over") {
				t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
			}
		}
		if now, _ := os.ReadFile(path); string(now) != string(orig) {
			t.Errorf("a refused resume changed the plan:\n%s", now)
		}
	})

	t.Run("summaries_checked_before_the_first_iteration", func(t *testing.T) {
		path := fixture(t, "stuck.md")
		blocker := filepath.Join(filepath.Dir(path), "not-a-dir")
		if err := os.WriteFile(blocker, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		orig, _ := os.ReadFile(path)
		r := runOn(t, path, "--summaries", filepath.Join(blocker, "summaries"))
		if r.code != exitError || !strings.Contains(r.stderr, "--summaries: cannot write iteration summaries") {
			t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if now, _ := os.ReadFile(path); string(now) != string(orig) {
			t.Errorf("the plan changed although its summaries cannot be written:\n%s", now)
		}
	})

	t.Run("state_checked_before_the_first_iteration", func(t *testing.T) {
		path := fixture(t, "stuck.md")
		blocker := filepath.Join(filepath.Dir(path), "not-a-dir")
		if err := os.WriteFile(blocker, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		r := runOn(t, path, "--state", blocker)
		if r.code != exitError || !strings.Contains(r.stderr, "--state: cannot write checkpoints") || r.summaries(t) != nil {
			t.Errorf("exit %d, summaries %v\n%s%s", r.code, r.summaries(t), r.stdout, r.stderr)
		}
	})

	t.Run("no_checkpoint_still_takes_the_plans_lock", func(t *testing.T) {
		path := fixture(t, "stuck.md")
		release, err := lockPlan(planLockPath(path))
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		orig, _ := os.ReadFile(path)
		for _, args := range [][]string{{"--no-checkpoint"}, {"--session", "other"}, {"--recover-only"}} {
			r := runOn(t, path, args...)
			if r.code != exitError || !strings.Contains(r.stderr, "another run is working on this plan") {
				t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
			}
		}
		if now, _ := os.ReadFile(path); string(now) != string(orig) {
			t.Errorf("the plan changed under another run's lock:\n%s", now)
		}
	})

	t.Run("every_call_failed_is_said_with_the_last_error", func(t *testing.T) {
		r := runFixture(t, "stuck.md", "--parallel", "1", "--implementer-cmd", script(t, "impl_fail.sh"))
		if r.code != exitStuck {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		want := "Every implementer call failed (6 of 6); the last error: Phase 3: implementer failed: exit status 3: lean server crashed on phase 3\n"
		if !strings.Contains(r.stdout, "Stopped: stuck after 2 iteration(s)") || !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	})

	t.Run("a_partial_failure_is_not_every_call", func(t *testing.T) {
		r := runFixture(t, "stuck.md", "--sim-fail", "Phase 2")
		if r.code != exitStuck || strings.Contains(r.stdout, "Every implementer call failed") {
			t.Errorf("exit %d\n%s", r.code, r.stdout)
		}
	})
}

// TestMachineOutput covers --json, --version and the reasons of usage
// errors.
func TestMachineOutput(t *testing.T) {
	t.Run("json_final_result", func(t *testing.T) {
		r := runFixture(t, "stuck.md", "--json", "--sim-fail", "Phase 2")
		if r.code != exitStuck {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		var got jsonResult
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("stdout is not one JSON result: %v\n%s", err, r.stdout)
		}
		if dec.More() {
			t.Errorf("more than the JSON result on stdout:\n%s", r.stdout)
		}
		got.Plan, got.Summary, got.Reason = filepath.Base(got.Plan), filepath.Base(got.Summary), strings.SplitN(got.Reason, ":", 2)[0]
		want := jsonResult{Status: "stuck", Reason: "stuck", ExitCode: exitStuck, Iterations: 3, Plan: "stuck.md",
			WorkRemaining: []string{"Phase_2"}, Summary: "003-iteration-3-summary.md",
			Usage: usage{Calls: 5, Failed: 3, External: 2, Local: 2}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("JSON result (-want +got):\n%s", diff)
		}
		if !strings.Contains(r.stderr, "Stopped: stuck after 3 iteration(s)") {
			t.Errorf("the human output is not on stderr:\n%s", r.stderr)
		}
	})

	t.Run("json_error", func(t *testing.T) {
		r := runFixture(t, "cycle.md", "--json", "--simulate")
		var got jsonResult
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("stdout: %v\n%s", err, r.stdout)
		}
		if r.code != exitError || got.Status != "error" || got.ExitCode != exitError || !strings.Contains(got.Reason, "dependency cycle") {
			t.Errorf("exit %d, result %+v", r.code, got)
		}
	})

	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(binary, "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), "planrunner ") || !strings.Contains(string(out), runtime.Version()) {
			t.Errorf("--version: %v\n%s", err, out)
		}
	})

	t.Run("extra_argument_gets_a_reason", func(t *testing.T) {
		out, _ := exec.Command(binary, "--simulate", "plan.md", "extra").CombinedOutput()
		if !strings.Contains(string(out), "planrunner: one plan file expected, got 2 arguments: plan.md extra") {
			t.Errorf("output:\n%s", out)
		}
	})

	t.Run("no_colour_or_escape_sequences_off_a_terminal", func(t *testing.T) {
		r := runFixture(t, "stuck.md", "--sim-fail", "Phase 2")
		if strings.Contains(r.stdout+r.stderr, "\x1b[") {
			t.Errorf("escape sequences in output:\n%q", r.stdout+r.stderr)
		}
	})
}
