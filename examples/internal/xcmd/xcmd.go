package xcmd

import (
	"os/exec"
	"time"
)

// DefaultGrace is a grace period suited to interactive programs: long
// enough for a command to save its work on SIGTERM, short enough for a
// Ctrl+C to feel prompt.
const DefaultGrace = 3 * time.Second

// Run starts cmd, which [Prepare] has configured, with [Start] and waits
// for it with [Wait]. Its error is that of exec.Cmd.Run.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return Wait(cmd)
}

// Wait waits for cmd, started after [Prepare], to exit, then kills what is
// left of its process group and returns the error of exec.Cmd.Wait.
//
// When the command exits on its own, the children it left are killed at
// once (on Linux; elsewhere once its output is closed too). Once the
// cancellation has sent SIGTERM, the rest of the group has the grace
// period to exit, even if the command exits first: sh -c exits at once,
// the program it started may need the time to save its work.
//
// A command prepared by Prepare must be started with [Start] and waited
// for with Wait (or run with Run), not with exec.Cmd's methods.
func Wait(cmd *exec.Cmd) error {
	defer release(cmd)
	if waitExited(cmd) {
		if _, ok := cancelledAt(cmd); !ok {
			// The group's leader, the watchdog (or the command, a
			// zombie until cmd.Wait reaps it), keeps the group id
			// from being reused.
			KillGroup(cmd)
		}
	}
	err := cmd.Wait()
	if at, ok := cancelledAt(cmd); ok {
		awaitGroup(cmd, at.Add(cmd.WaitDelay))
	}
	return err
}

// groupPoll is how often awaitGroup looks at a group.
const groupPoll = 20 * time.Millisecond

// awaitGroup waits until cmd's process group is empty, or until deadline.
func awaitGroup(cmd *exec.Cmd, deadline time.Time) {
	for groupAlive(cmd) && time.Now().Before(deadline) {
		time.Sleep(groupPoll)
	}
}
