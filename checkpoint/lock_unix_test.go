//go:build unix

package checkpoint_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
)

// TestHelperProcess is not a test: run by the lock tests as a child process
// (with helperEnv set), it takes the lock of a session, says "locked" on
// stdout, and holds the lock until stdin closes or it is killed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "lock" {
		t.Skip("helper process for the lock tests")
	}
	d := checkpoint.NewDir(os.Getenv("HELPER_DIR"))
	release, err := d.Lock(ctx, os.Getenv("HELPER_SESSION"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("locked")
	buf := make([]byte, 1)
	os.Stdin.Read(buf) // blocks until the parent closes stdin or kills us
	release()
	os.Exit(0)
}

// holder is a child process holding a session's lock.
type holder struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
}

func startHolder(t *testing.T, dir, session string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=lock", "HELPER_DIR="+dir, "HELPER_SESSION="+session)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper process: got %q, %v; want \"locked\"", line, err)
	}
	return h
}

// TestDirLockAcrossProcesses covers seed 004's concurrent execution guard: a
// second run of a live session is refused with the holder's pid, and a run
// that crashed (killed, no cleanup) never blocks the next one.
func TestDirLockAcrossProcesses(t *testing.T) {
	t.Run("seed004_running_session_refuses_second_run", func(t *testing.T) {
		dir := t.TempDir()
		h := startHolder(t, dir, "build")
		_, err := checkpoint.NewDir(dir).Lock(ctx, "build")
		var le *checkpoint.LockedError
		if !errors.As(err, &le) {
			t.Fatalf("Lock while another process holds it: got %v, want a *LockedError", err)
		}
		want := &checkpoint.LockedError{Session: "build", Holder: "pid " + strconv.Itoa(h.cmd.Process.Pid)}
		if diff := cmp.Diff(want, le); diff != "" {
			t.Errorf("LockedError mismatch (-want +got):\n%s", diff)
		}
		// Another session is free meanwhile.
		release, err := checkpoint.NewDir(dir).Lock(ctx, "test")
		if err != nil {
			t.Fatalf("Lock of another session: %v", err)
		}
		release()
	})
	t.Run("seed004_crashed_run_does_not_block", func(t *testing.T) {
		dir := t.TempDir()
		h := startHolder(t, dir, "build")
		if err := h.cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
			t.Fatal(err)
		}
		h.cmd.Wait()
		release, err := checkpoint.NewDir(dir).Lock(ctx, "build")
		if err != nil {
			t.Fatalf("Lock after the holder was killed: %v", err)
		}
		if got, want := string(readFile(t, filepath.Join(dir, "build.lock"))), fmt.Sprintf("pid %d\n", os.Getpid()); got != want {
			t.Errorf("lock file holds %q, want %q", got, want)
		}
		if err := release(); err != nil {
			t.Errorf("release: %v", err)
		}
	})
	t.Run("released_by_clean_exit", func(t *testing.T) {
		dir := t.TempDir()
		h := startHolder(t, dir, "build")
		h.stdin.Close()
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("helper exited with %v", err)
		}
		release, err := checkpoint.NewDir(dir).Lock(ctx, "build")
		if err != nil {
			t.Fatalf("Lock after the holder released it: %v", err)
		}
		release()
	})
}

// TestDirLockInProcess: flock belongs to the open file, so a second Lock in
// the same process fails too, naming this process.
func TestDirLockInProcess(t *testing.T) {
	dir := t.TempDir()
	a, b := checkpoint.NewDir(dir), checkpoint.NewDir(dir)
	release, err := a.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*checkpoint.Dir{a, b} {
		_, err := d.Lock(ctx, "s")
		var le *checkpoint.LockedError
		if !errors.As(err, &le) {
			t.Fatalf("second Lock in the process: got %v, want a *LockedError", err)
		}
		if diff := cmp.Diff(&checkpoint.LockedError{Session: "s", Holder: "pid " + strconv.Itoa(os.Getpid())}, le); diff != "" {
			t.Errorf("LockedError mismatch (-want +got):\n%s", diff)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	if got := string(readFile(t, filepath.Join(dir, "s.lock"))); got != "" {
		t.Errorf("released lock file holds %q, want it empty", got)
	}
	again, err := b.Lock(ctx, "s")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}
