package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unmakeable returns a directory path that cannot be created, even by root:
// its parent is a regular file. It stands for a HOME that does not exist
// under a directory the user cannot write (HOME=/nonexistent as nobody).
func unmakeable(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(file, "home")
}

// TestDefaultStateWithoutHome: when the user's cache directory cannot be
// made, the default checkpoint directory is refine-quickstart-UID in the
// temporary directory, not an error.
func TestDefaultStateWithoutHome(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", unmakeable(t))
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("TMPDIR", tmp)
	want := filepath.Join(tmp, fmt.Sprintf("refine-quickstart-%d", os.Getuid()))
	if got := defaultState(); got != want {
		t.Errorf("defaultState() = %s, want %s", got, want)
	}
}

// TestQuickstartWithoutHome runs the README's first command as an account
// whose HOME cannot be made: it converges, exit 0, and says where its
// checkpoints are kept; -resume finds them there.
func TestQuickstartWithoutHome(t *testing.T) {
	tmp := t.TempDir()
	env := append(os.Environ(), "HOME="+unmakeable(t), "XDG_CACHE_HOME=", "TMPDIR="+tmp)
	state := filepath.Join(tmp, fmt.Sprintf("refine-quickstart-%d", os.Getuid()))
	for _, args := range [][]string{nil, {"-resume"}} {
		cmd := exec.Command(binary, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("quickstart %v: %v\n%s", args, err, out)
		}
		for _, want := range []string{"Checkpoints of session quickstart in " + state + "\n", "Status: converged after 2 iterations"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("quickstart %v: output lacks %q:\n%s", args, want, out)
			}
		}
	}
}

// TestGoOnAfterTheLimit: a session stopped by -max-iterations 1 says how to
// go on from the command line; a -resume under the default limit is refused
// with the same advice (not a Go API), and that advice converges.
func TestGoOnAfterTheLimit(t *testing.T) {
	state := t.TempDir()
	out, err := exec.Command(binary, "-state", state, "-max-iterations", "1").Output()
	if err != nil {
		t.Fatalf("-max-iterations 1: %v\n%s", err, out)
	}
	const fork = "go run ./examples/quickstart -fork quickstart@2 -state "
	if want := "Go on from here with more iterations: " + fork + state + "\n"; !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}

	cmd := exec.Command(binary, "-state", state, "-resume")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), "max iterations 1 → 4") ||
		!strings.Contains(stderr.String(), fork+state) || strings.Contains(stderr.String(), "AllowSettingsChange") {
		t.Errorf("-resume: exit %d, stderr:\n%s", cmd.ProcessState.ExitCode(), stderr.String())
	}

	out, err = exec.Command(binary, "-state", state, "-fork", "quickstart@2").Output()
	if err != nil || !strings.Contains(string(out), "Status: converged") {
		t.Errorf("-fork quickstart@2: %v\n%s", err, out)
	}
}

// TestResumeUnderOtherSettings: an interrupted session resumed under
// another limit is refused with the flag that allows it, which resumes it.
func TestResumeUnderOtherSettings(t *testing.T) {
	state := t.TempDir()
	cmd := exec.Command(binary, "-state", state, "-slow", "1h", "-max-iterations", "3")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var seen string
	for !strings.Contains(seen, "Iteration 1/3 starting...") {
		n, err := stdout.Read(buf)
		if err != nil {
			t.Fatalf("%v; output so far:\n%s", err, seen)
		}
		seen += string(buf[:n])
	}
	_ = cmd.Process.Signal(os.Interrupt)
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v, want exit 130", err)
	}

	refused := exec.Command(binary, "-state", state, "-resume")
	var stderr strings.Builder
	refused.Stderr = &stderr
	_ = refused.Run()
	want := "go run ./examples/quickstart -resume -allow-settings-change -state " + state
	if refused.ProcessState.ExitCode() != 1 || !strings.Contains(stderr.String(), want) {
		t.Fatalf("-resume: exit %d, want 1 and %q in stderr:\n%s", refused.ProcessState.ExitCode(), want, stderr.String())
	}
	out, err := exec.Command(binary, "-state", state, "-resume", "-allow-settings-change").Output()
	if err != nil || !strings.Contains(string(out), "Status: converged") {
		t.Errorf("-resume -allow-settings-change: %v\n%s", err, out)
	}
}

// TestAllowSettingsChangeNeedsResume: the flag alone is a usage error.
func TestAllowSettingsChangeNeedsResume(t *testing.T) {
	var stderr strings.Builder
	if code := cli([]string{"-allow-settings-change", "-state", t.TempDir()}, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "goes with -resume") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
