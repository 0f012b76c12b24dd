//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockPlan takes the plan's lock: an exclusive flock on lockPath, which
// the kernel releases if the process dies. Another live holder gives a
// *PlanLockedError. The file stays when the lock is released (removing it
// would let a waiting run lock a file no other run sees).
func lockPlan(lockPath string) (release func(), err error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking the plan: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lockPath)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &PlanLockedError{Path: lockPath, Holder: strings.TrimSpace(string(holder))}
		}
		return nil, fmt.Errorf("locking the plan: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
