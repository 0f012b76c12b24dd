package xcmd

import (
	"os/exec"
	"time"
)

// DefaultGrace is a grace period suited to interactive programs: long
// enough for a command to save its work on SIGTERM, short enough for a
// Ctrl+C to feel prompt.
const DefaultGrace = 3 * time.Second

// Run starts cmd, which [Prepare] has configured, and waits for it with
// [Wait]. Its error is that of exec.Cmd.Run.
func Run(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	return Wait(cmd)
}

// Wait waits for cmd, started after [Prepare], to exit; it kills what is
// left of its process group as soon as the command itself has exited (on
// Linux; elsewhere once its output is closed too, or grace after the
// cancellation), then returns the error of exec.Cmd.Wait.
func Wait(cmd *exec.Cmd) error {
	if waitExited(cmd) {
		KillGroup(cmd)
	}
	err := cmd.Wait()
	KillGroup(cmd)
	return err
}
