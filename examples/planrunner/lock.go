package main

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrPlanLocked is matched by every *PlanLockedError.
var ErrPlanLocked = errors.New("planrunner: another run is working on this plan")

// PlanLockedError reports a plan whose lock another run holds: two runs
// must never edit one plan, whatever their checkpoint settings.
type PlanLockedError struct {
	Path string
	// Holder is what the lock file says of its holder ("pid 123"), if
	// anything.
	Holder string
}

func (e *PlanLockedError) Error() string {
	msg := "another run is working on this plan (lock " + e.Path
	if e.Holder != "" {
		msg += " held by " + e.Holder
	}
	return msg + ")"
}

// Is reports whether target is ErrPlanLocked.
func (e *PlanLockedError) Is(target error) bool { return target == ErrPlanLocked }

// planLockPath is the lock file of the plan at path: a hidden file next to
// it, so that every run of the plan finds it whatever its --state.
func planLockPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".planrunner.lock")
}

// checkWritableDir makes dir if need be and checks that a file can be
// created in it, so that a run fails before its first iteration rather
// than after its work.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".planrunner-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
