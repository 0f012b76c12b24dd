//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// isolate runs cmd in its own process group, so that a Ctrl+C in the
// terminal reaches only agentloop, and makes the cancellation of cmd's
// context send SIGTERM to the whole group: the command and its children.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}

// killGroup kills what is left of cmd's process group: children that
// ignored SIGTERM or outlived the command.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH: nothing left
	}
}

// signalName describes how a process that did not exit ended.
func signalName(state *os.ProcessState) string {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
