//go:build unix

package xcmd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/refine-go/refine/examples/internal/xcmd"
)

// helperEnv makes the test binary a helper process (see TestMain).
const helperEnv = "XCMD_TEST_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		startAndBlock(dir)
		return
	}
	goleak.VerifyTestMain(m)
}

// treeScript starts a tree of processes: two children of sh, one of which
// forks a grandchild, all in the command's group. Each writes its pid to a
// file of its name.
const treeScript = `sleep 300 & echo $! > child1
sh -c 'sleep 300 & echo $! > grandchild; echo $$ > child2; wait' &
wait`

// startAndBlock is the helper process of TestProgramKilledKillsTree: the
// orchestrator. It starts treeScript in dir with Start, writes the
// command's pid to dir/command and blocks until it is killed.
func startAndBlock(dir string) {
	cmd := exec.CommandContext(context.Background(), "sh", "-c", treeScript)
	cmd.Dir = dir
	xcmd.Prepare(cmd, time.Second)
	if err := xcmd.Start(cmd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(dir, "command"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for { // until killed; a bare select{} would be a deadlock the runtime ends
		time.Sleep(time.Hour)
	}
}

// patience bounds every wait for a real process: far more than any of them
// takes, so that the tests do not depend on timing.
const patience = 30 * time.Second

// poll calls cond until it is true; it fails the test after patience.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPid polls for a file holding a process id and returns it.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	poll(t, "waiting for "+filepath.Base(path), func() bool {
		data, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(data), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	return pid
}

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

// waitGone waits for the end of a process that was killed (a signal takes
// effect asynchronously); it fails the test after patience.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	poll(t, fmt.Sprintf("the end of process %d", pid), func() bool { return !alive(pid) })
}

// shell returns a prepared sh -c script running in dir.
func shell(ctx context.Context, dir, script string, grace time.Duration) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = dir
	xcmd.Prepare(cmd, grace)
	return cmd
}

// TestCancelEndsGroup: cancelling the context ends the command and every
// process it started; a grandchild that would write a file later never
// does.
func TestCancelEndsGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	script := `sh -c 'sleep 2; echo late >> late.txt' & echo $! > writer
sleep 300 & echo $! > sleeper
wait`
	cmd := shell(ctx, dir, script, patience)
	if err := xcmd.Start(cmd); err != nil {
		t.Fatal(err)
	}
	writer, sleeper := readPid(t, filepath.Join(dir, "writer")), readPid(t, filepath.Join(dir, "sleeper"))
	cancel()
	if err := xcmd.Wait(cmd); err == nil {
		t.Error("Wait = nil after the cancellation, want an error")
	}
	for _, pid := range []int{writer, sleeper} {
		waitGone(t, pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "late.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("late.txt: %v, want it never written", err)
	}
}

// TestCancelSendsTermFirst: the group gets SIGTERM, and a command that
// handles it exits on its own terms.
func TestCancelSendsTermFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := shell(ctx, dir, `trap 'echo TERM > got; exit 0' TERM; sleep 300 & echo $! > sleeper; wait`, patience)
	if err := xcmd.Start(cmd); err != nil {
		t.Fatal(err)
	}
	sleeper := readPid(t, filepath.Join(dir, "sleeper"))
	cancel()
	xcmd.Wait(cmd)
	if got, err := os.ReadFile(filepath.Join(dir, "got")); string(got) != "TERM\n" {
		t.Errorf("the command's trap wrote %q, %v; want TERM", got, err)
	}
	waitGone(t, sleeper)
}

// TestCancelGivesChildrenTheGrace: a child that takes its time to exit on
// SIGTERM gets the grace period, even when the command (sh) dies at once.
func TestCancelGivesChildrenTheGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	script := `(trap 'sleep 0.2; echo saved > saved; exit 0' TERM; echo $$ > ready; while :; do sleep 0.05; done) &
wait`
	cmd := shell(ctx, dir, script, patience)
	if err := xcmd.Start(cmd); err != nil {
		t.Fatal(err)
	}
	readPid(t, filepath.Join(dir, "ready"))
	cancel()
	xcmd.Wait(cmd)
	if got, err := os.ReadFile(filepath.Join(dir, "saved")); string(got) != "saved\n" {
		t.Errorf("the child's trap wrote %q, %v; want saved", got, err)
	}
}

// TestCancelKillsAfterGrace: a group that ignores SIGTERM is killed once
// the grace has passed.
func TestCancelKillsAfterGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := shell(ctx, dir, `trap '' TERM; sleep 300 & echo $! > sleeper; wait`, 50*time.Millisecond)
	if err := xcmd.Start(cmd); err != nil {
		t.Fatal(err)
	}
	sleeper := readPid(t, filepath.Join(dir, "sleeper"))
	cancel()
	err := xcmd.Wait(cmd)
	if got := xcmd.SignalName(cmd.ProcessState); got != "killed" {
		t.Errorf("the command ended with %v (signal %q), want killed", err, got)
	}
	waitGone(t, sleeper)
}

// TestExitEndsGroup: when the command exits, the children it left are
// killed at once, even while they hold its output open.
func TestExitEndsGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere the group is killed only after the output closes")
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := shell(t.Context(), dir, `sleep 300 & echo $! > sleeper; echo done`, patience)
	var out xcmd.Tail
	cmd.Stdout = &out
	// Without the kill on exit, Wait would wait for the sleeper, which
	// holds stdout, for the whole grace and return exec.ErrWaitDelay.
	if err := xcmd.Run(cmd); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if out.String() != "done\n" {
		t.Errorf("output %q, want done", out.String())
	}
	waitGone(t, readPid(t, filepath.Join(dir, "sleeper")))
}

// TestExitStatus: Run returns the command's exit status.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	cmd := shell(t.Context(), t.TempDir(), "exit 3", patience)
	var ee *exec.ExitError
	if err := xcmd.Run(cmd); !errors.As(err, &ee) || ee.ExitCode() != 3 || xcmd.SignalName(ee.ProcessState) != "" {
		t.Errorf("Run = %v, want exit status 3", err)
	}
}

// TestProgramKilledKillsTree: a program killed outright (SIGKILL) takes
// with it its command and every process the command started: the
// children of sh and their own children, which the parent-death signal
// does not reach (rule: a command dies with its orchestrator; catches a
// Start without the watchdog, or a watchdog that does not kill the group).
func TestProgramKilledKillsTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(exe)
	helper.Env = append(os.Environ(), helperEnv+"="+dir)
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	var pids []int
	for _, name := range []string{"command", "child1", "child2", "grandchild"} {
		pids = append(pids, readPid(t, filepath.Join(dir, name)))
	}
	pgrp := procPgrp(t, pids[0])
	if members := groupMembers(pgrp); len(members) < len(pids) {
		t.Fatalf("group %d holds %v, want at least %v", pgrp, members, pids)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	for _, pid := range pids {
		waitGone(t, pid)
	}
	poll(t, fmt.Sprintf("the end of group %d", pgrp), func() bool { return len(groupMembers(pgrp)) == 0 })
}

// TestWaitEndsWatchdog: once Wait returns, the group is empty, the
// watchdog included: running a command leaves no process behind.
func TestWaitEndsWatchdog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := shell(t.Context(), dir, `echo $$ > command; read x`, patience)
	cmd.Stdin = strings.NewReader("line\n")
	if err := xcmd.Start(cmd); err != nil {
		t.Fatal(err)
	}
	pgrp := procPgrp(t, readPid(t, filepath.Join(dir, "command")))
	if err := xcmd.Wait(cmd); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if pgrp == cmd.Process.Pid {
		t.Errorf("the command leads its group %d; want the watchdog to lead it", pgrp)
	}
	if members := groupMembers(pgrp); len(members) != 0 {
		t.Errorf("after Wait, group %d holds %v; want it empty", pgrp, members)
	}
}

// procPgrp returns the process group of a live process.
func procPgrp(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		t.Fatal(err)
	}
	return pgrp
}

// groupMembers returns the live processes of a process group, by /proc.
func groupMembers(pgrp int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, path := range stats {
		pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path, "/proc/"), "/stat"))
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgrp) && f[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}
