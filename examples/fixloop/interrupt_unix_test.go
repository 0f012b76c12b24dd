//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/examples/internal/e2etest"
	"github.com/refine-go/refine/iterate"
)

// alive reports whether pid is a live process: not gone, nor a zombie that
// no one reaped.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')') // pid (comm) S ...
	return !(i >= 0 && i+2 < len(s) && s[i+2] == 'Z')
}

// waitFile polls for a file written by a process, within a wide bound.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if data, err := os.ReadFile(path); err == nil && len(data) > 0 {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkLateWriterGone checks that the implementer's grandchild whose pid
// is in pidFile was ended with it (it would have edited claims.go later)
// and that the working copy's claims.go is unchanged.
func checkLateWriterGone(t *testing.T, pidFile, work string) {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the implementer's child %d outlived fixloop", pid)
	}
	if diff := cmp.Diff(readFile(t, "testdata/sandbox/claims.go"), readFile(t, filepath.Join(work, "claims.go"))); diff != "" {
		t.Errorf("claims.go changed (-want +got):\n%s", diff)
	}
}

// TestInterruptAndResume: an interrupt (SIGINT, as Ctrl-C sends to the
// terminal's foreground group: fixloop, not the implementer, which runs in
// a group of its own) during an attempt ends the implementer and its
// children before the state is saved as interrupted; fixloop exits 130 with
// the command that resumes it, and the resumed session proceeds.
func TestInterruptAndResume(t *testing.T) {
	t.Parallel()
	logDir := t.TempDir()
	env := []string{"FIXLOOP_TEST_LOG=" + logDir, "FIXLOOP_TEST_PATCHES=" + abs(t, "testdata/patches/converge")}
	work := filepath.Join(t.TempDir(), "work")
	impl := "bash " + shellQuote(abs(t, "testdata/interrupt.sh"))

	cmd := exec.CommandContext(t.Context(), binary, "--workdir", work, "--implementer-cmd", impl, "--json", sandbox(t))
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the terminal's foreground group
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(logDir, "late.pid"))
	waitFile(t, filepath.Join(logDir, "interrupted"))
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitInterrupted {
		t.Fatalf("interrupted run: %v, want exit 130\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	checkLateWriterGone(t, filepath.Join(logDir, "late.pid"), work)
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

// TestTaskTimeoutEndsImplementer: --task-timeout ends the implementer and
// its children, which never edit the working copy afterwards.
func TestTaskTimeoutEndsImplementer(t *testing.T) {
	t.Parallel()
	logDir := t.TempDir()
	work := filepath.Join(t.TempDir(), "work")
	script := filepath.Join(t.TempDir(), "hang.sh")
	writeFile(t, script, "(sleep 3; echo '// late' >> claims.go) &\necho $! > \"$FIXLOOP_TEST_LOG/late.pid\"\nwait\n")
	o := fixloop(t, "", []string{"FIXLOOP_TEST_LOG=" + logDir}, "--workdir", work, "--implementer-cmd", "sh "+shellQuote(script),
		"--task-timeout", "1s", "--max-iterations", "1", "--ask", "never", "--json", sandbox(t))
	if o.code != exitEscalated {
		t.Fatalf("exit %d, want 3 (escalated)\n%s%s", o.code, o.stdout, o.stderr)
	}
	checkLateWriterGone(t, filepath.Join(logDir, "late.pid"), work)
	if !strings.Contains(o.stderr, "every attempt failed (1 of 1); the last: ") {
		t.Errorf("stderr does not say that every attempt failed:\n%s", o.stderr)
	}
}

// TestKillLeavesNoImplementer: fixloop killed outright (kill -9) takes its
// implementer and the implementer's children with it (rule: no external
// command outlives its orchestrator; catches an implementer started
// without xcmd's watchdog — xcmd.Run replaced by cmd.Run in worker.go —
// whose child the parent-death signal of sh -c does not reach).
func TestKillLeavesNoImplementer(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to list a process group's members")
	}
	t.Parallel()
	logDir := t.TempDir()
	work := filepath.Join(t.TempDir(), "work")
	script := filepath.Join(t.TempDir(), "hang.sh")
	writeFile(t, script, "sleep 300 &\necho $! > \"$FIXLOOP_TEST_LOG/child.tmp\" && mv \"$FIXLOOP_TEST_LOG/child.tmp\" \"$FIXLOOP_TEST_LOG/child.pid\"\nsleep 300\n")
	cmd := exec.Command(binary, "--workdir", work, "--implementer-cmd", "sh "+shellQuote(script), "--ask", "never", "--json", sandbox(t))
	cmd.Env = append(os.Environ(), "FIXLOOP_TEST_LOG="+logDir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	child, err := strconv.Atoi(strings.TrimSpace(waitFile(t, filepath.Join(logDir, "child.pid"))))
	if err != nil {
		t.Fatal(err)
	}
	e2etest.KillLeavesNoGroup(t, cmd, child, "the implementer's group")
}
