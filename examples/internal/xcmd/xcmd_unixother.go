//go:build unix && !linux

package xcmd

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal does nothing: only Linux has a parent-death signal.
func setParentDeathSignal(attr *syscall.SysProcAttr) {}

// waitExited reports false at once: [Wait] kills the group after exec.Cmd.Wait,
// which returns once the command's output is closed (or grace after the
// cancellation).
func waitExited(cmd *exec.Cmd) bool { return false }

// watchdogIgnoresTerm: groupAlive cannot tell the watchdog apart, which
// must then end on the SIGTERM of a cancellation. (Until [Wait] reaps it,
// its zombie keeps the group alive for the grace.)
const watchdogIgnoresTerm = false

// groupAlive reports whether cmd's process group has a member.
func groupAlive(cmd *exec.Cmd) bool { return groupSignalable(cmd) }
