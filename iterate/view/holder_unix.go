//go:build unix

package view

import (
	"errors"
	"syscall"
)

// processGone reports whether no process of id pid runs on this host.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
