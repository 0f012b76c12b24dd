//go:build unix

package e2etest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// KillLeavesNoGroup kills cmd outright (SIGKILL, no chance to clean up),
// reaps it, and fails t unless the process group of child (a command cmd
// started: an AI CLI, an implementer, an agent), what it names, is empty
// within 30 s; then it kills the group's survivors. It guards the rule that
// no command outlives its orchestrator.
func KillLeavesNoGroup(t testing.TB, cmd *exec.Cmd, child int, what string) {
	t.Helper()
	pgid, err := syscall.Getpgid(child)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for members := GroupMembers(pgid); len(members) > 0; members = GroupMembers(pgid) {
		if time.Now().After(deadline) {
			syscall.Kill(-pgid, syscall.SIGKILL)
			t.Fatalf("processes %v of %s outlived %s, killed", members, what, cmd.Path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
