package checkpoint

import "context"

// Memory keeps checkpoints in memory, the last Keep generations of each
// session. The zero value is ready to use and keeps 3. Safe for concurrent
// use.
type Memory struct {
	// Keep is the number of generations kept per session; 0 means 3.
	Keep int
}

// Save stores a deep copy of c.
func (m *Memory) Save(ctx context.Context, c *Checkpoint) error { panic("unimplemented") }

// Load returns a deep copy of the newest checkpoint of session, or
// ErrNotFound.
func (m *Memory) Load(ctx context.Context, session string) (*Checkpoint, error) {
	panic("unimplemented")
}

// Lock takes the session's lock, or returns a *LockedError when it is held.
// release gives it back; calling it twice is harmless.
func (m *Memory) Lock(ctx context.Context, session string) (release func() error, err error) {
	panic("unimplemented")
}

// Remove deletes every checkpoint of session. Removing a session without
// checkpoints is not an error.
func (m *Memory) Remove(ctx context.Context, session string) error { panic("unimplemented") }
