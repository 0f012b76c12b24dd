package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestInterruptAndResume does what the README suggests: run with -slow,
// press Ctrl+C during an iteration (SIGINT), then -resume.
func TestInterruptAndResume(t *testing.T) {
	state := t.TempDir()
	cmd := exec.Command(binary, "-state", state, "-slow", "1h")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "Iteration 1/4 starting...") {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v, want exit 130\n%s", err, out.String())
	}
	if want := "Resume with: go run ./examples/quickstart -resume -state " + state; !strings.Contains(out.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, out.String())
	}

	res, err := exec.Command(binary, "-state", state, "-resume").Output()
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, res)
	}
	if !strings.Contains(string(res), "Status: converged after 2 iterations") {
		t.Errorf("resume:\n%s", res)
	}
}

// TestStartOverInterruptedSession: a start without -resume over an
// interrupted session does not start over it (which would prune its
// progress without a word): it says how to resume or start over, exit 1,
// and leaves the session as it was; -fresh starts over.
func TestStartOverInterruptedSession(t *testing.T) {
	state := t.TempDir()
	cmd := exec.Command(binary, "-state", state, "-slow", "1h", "-max-iterations", "3")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "Iteration 1/3 starting...") {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err == nil {
		t.Fatal("the interrupted run exited 0")
	}
	before := listDir(t, state)

	again := exec.Command(binary, "-state", state)
	var aout, aerr strings.Builder
	again.Stdout, again.Stderr = &aout, &aerr
	err = again.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("start over an interrupted session: %v, want exit 1\nstdout:\n%s\nstderr:\n%s", err, aout.String(), aerr.String())
	}
	for _, want := range []string{"an interrupted session is saved in " + state, "Resume with: go run ./examples/quickstart -resume -state " + state,
		"or start over with: go run ./examples/quickstart -fresh -state " + state} {
		if !strings.Contains(aerr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, aerr.String())
		}
	}
	if strings.Contains(aout.String(), "Iteration 1") {
		t.Errorf("it ran:\n%s", aout.String())
	}
	if after := listDir(t, state); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("the session changed: %v, then %v", before, after)
	}

	out, err := exec.Command(binary, "-state", state, "-fresh").Output()
	if err != nil || !strings.Contains(string(out), "Status: converged after 2 iterations") {
		t.Errorf("-fresh: %v\n%s", err, out)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
