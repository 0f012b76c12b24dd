package checkpoint

import "context"

// Dir keeps checkpoints as files in a directory, one file per generation,
// named after the session. Saves are atomic: a crash at any instant leaves
// either the previous generation or the new one, never a torn file. Safe for
// concurrent use.
type Dir struct{}

// DirOption configures a [Dir].
type DirOption interface{ applyDir(*Dir) }

// Keep sets how many generations of a session a [Dir] keeps (default 3,
// minimum 1).
func Keep(n int) DirOption { panic("unimplemented") }

// NewDir returns a store for the directory path, created on first save.
func NewDir(path string, opts ...DirOption) *Dir { panic("unimplemented") }

// Path returns the directory.
func (d *Dir) Path() string { panic("unimplemented") }

// Save writes c as a new generation and prunes generations beyond Keep.
func (d *Dir) Save(ctx context.Context, c *Checkpoint) error { panic("unimplemented") }

// Load returns the newest readable generation of session. Damaged newer
// generations are quarantined (renamed with a ".corrupt" suffix, never
// deleted) and described in the result's Notes. With no readable generation
// it returns a *CorruptError if a damaged one existed, else ErrNotFound.
func (d *Dir) Load(ctx context.Context, session string) (*Checkpoint, error) {
	panic("unimplemented")
}

// Lock takes an exclusive lock on the session through the operating system
// (flock on Unix), released by the kernel if the process dies. A held lock
// gives a *LockedError naming the holder's pid.
func (d *Dir) Lock(ctx context.Context, session string) (release func() error, err error) {
	panic("unimplemented")
}

// Remove deletes every generation of session (not quarantined files).
func (d *Dir) Remove(ctx context.Context, session string) error { panic("unimplemented") }
