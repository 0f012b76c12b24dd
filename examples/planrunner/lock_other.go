//go:build !unix

package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// lockPlan takes the plan's lock: the file lockPath, created exclusively
// and removed on release. A crashed run leaves it behind: delete it by
// hand once sure no run is alive. An existing file gives a
// *PlanLockedError.
func lockPlan(lockPath string) (release func(), err error) {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		holder, _ := os.ReadFile(lockPath)
		return nil, &PlanLockedError{Path: lockPath, Holder: strings.TrimSpace(string(holder))}
	}
	if err != nil {
		return nil, fmt.Errorf("locking the plan: %w", err)
	}
	f.WriteString("pid " + strconv.Itoa(os.Getpid()) + "\n")
	f.Close()
	return func() { os.Remove(lockPath) }, nil
}
