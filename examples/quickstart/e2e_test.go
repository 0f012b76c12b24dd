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
