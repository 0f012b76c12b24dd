//go:build unix

package xcmd

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Prepare configures cmd, made by exec.CommandContext and not yet started,
// to run in a process group of its own: the cancellation of its context
// sends SIGTERM to the group, and grace later (cmd.WaitDelay) the command
// is killed and its output pipes closed; [Wait] then kills the rest of the
// group. On Linux the command also gets SIGKILL if the program dies first.
// Prepare keeps the other fields of cmd.SysProcAttr. grace should be
// positive: with 0, a command that ignores SIGTERM is waited for as long
// as it runs (the rule of exec.Cmd.WaitDelay).
//
// A command in its own group is not in the terminal's foreground group:
// it must not read from the terminal (give it another standard input).
func Prepare(cmd *exec.Cmd, grace time.Duration) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	setParentDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		cancelled.Store(cmd, time.Now())
		return signalGroup(cmd, syscall.SIGTERM)
	}
	cmd.WaitDelay = grace
}

// KillGroup sends SIGKILL to the process group of cmd, started after
// [Prepare]: the command and the children it left. It does nothing before
// the command starts or when the group is empty.
func KillGroup(cmd *exec.Cmd) {
	_ = signalGroup(cmd, syscall.SIGKILL)
}

// signalGroup sends sig to cmd's process group; os.ErrProcessDone when the
// group is empty.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// groupSignalable reports whether cmd's process group has a member, a
// zombie that no one reaped yet included (so would, in theory, a new group
// that reused the id of a group that ended).
func groupSignalable(cmd *exec.Cmd) bool {
	return cmd.Process != nil && syscall.Kill(-cmd.Process.Pid, 0) == nil
}

// SignalName names the signal that ended a process, "" when it exited
// normally (or state is nil).
func SignalName(state *os.ProcessState) string {
	if state == nil {
		return ""
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
