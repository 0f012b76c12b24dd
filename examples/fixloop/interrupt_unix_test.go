//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/iterate"
)

// TestInterruptAndResume: an interrupt (SIGINT) during an attempt stops the
// loop with its state checkpointed as interrupted, exit 1 and the command
// that resumes it; the resumed session proceeds.
func TestInterruptAndResume(t *testing.T) {
	t.Parallel()
	logDir := t.TempDir()
	env := []string{"FIXLOOP_TEST_LOG=" + logDir, "FIXLOOP_TEST_PATCHES=" + abs(t, "testdata/patches/converge")}
	work := filepath.Join(t.TempDir(), "work")
	impl := "bash " + shellQuote(abs(t, "testdata/interrupt.sh"))

	cmd := exec.CommandContext(t.Context(), binary, "--workdir", work, "--implementer-cmd", impl, "--json", "testdata/sandbox")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the stand-in signals this group only
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitError {
		t.Fatalf("interrupted run: %v, want exit 1\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") || !strings.Contains(stderr.String(), "fixloop resume --workdir") {
		t.Errorf("stderr lacks the interruption and the resume command:\n%s", stderr.String())
	}
	if c, _ := savedState(t, work); c.Status != string(iterate.Interrupted) {
		t.Fatalf("checkpoint status = %q, want interrupted", c.Status)
	}

	o := fixloop(t, "", env, "resume", "--workdir", work, "--json")
	if o.code != exitOK {
		t.Fatalf("resume: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	ls := parseLines(t, o.stdout)
	if got := steps(ls); len(got) == 0 || got[len(got)-1].Action != "proceed" {
		t.Errorf("resumed decisions = %+v, want a final proceed", got)
	}
	if diff := cmp.Diff(readFile(t, "testdata/patches/converge/03/claims.go"), readFile(t, filepath.Join(work, "claims.go"))); diff != "" {
		t.Errorf("claims.go after resume (-want +got):\n%s", diff)
	}
}
