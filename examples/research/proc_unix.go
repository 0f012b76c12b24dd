//go:build unix

package main

import (
	"context"
	"os/exec"
	"syscall"
)

// shellCommand runs line with /bin/sh in a process group of its own, so
// that cancelling the task kills the command and everything it started.
func shellCommand(ctx context.Context, line string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}
