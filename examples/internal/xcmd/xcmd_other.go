//go:build !unix

package xcmd

import (
	"os"
	"os/exec"
	"time"
)

// Prepare configures cmd, made by exec.CommandContext and not yet started,
// so that grace after the
// cancellation of its context (cmd.WaitDelay) its output pipes are closed.
// Without process groups, the cancellation kills the command alone; its
// children may survive.
func Prepare(cmd *exec.Cmd, grace time.Duration) {
	cmd.WaitDelay = grace
}

// Start starts cmd: where there are no process groups, there is no
// watchdog either.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

// KillGroup does nothing where there are no process groups.
func KillGroup(cmd *exec.Cmd) {}

// SignalName returns "": without Unix signals, a command only exits.
func SignalName(state *os.ProcessState) string { return "" }

// groupAlive reports false: there are no process groups.
func groupAlive(cmd *exec.Cmd) bool { return false }

// waitExited reports false at once.
func waitExited(cmd *exec.Cmd) bool { return false }

// cancelledAt reports false: the cancellation is exec.Cmd's own.
func cancelledAt(cmd *exec.Cmd) (time.Time, bool) { return time.Time{}, false }

// release does nothing.
func release(cmd *exec.Cmd) {}
