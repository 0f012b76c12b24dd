package checkpoint

import (
	"context"
	"fmt"
	"sync"
)

// DefaultKeep is the number of generations of a session that [Memory] and
// [Dir] keep unless told otherwise.
const DefaultKeep = 3

// Memory keeps checkpoints in memory, the last Keep generations of each
// session. The zero value is ready to use and keeps 3. Safe for concurrent
// use.
//
// Memory behaves like a store that persists: it keeps what [Marshal] would
// save (not the Notes, nor the History's unsaved Current assessment and
// Gaps), deep-copied, so a checkpoint loaded from Memory equals one loaded
// from a [Dir]. Like [Dir], it gives each save the generation
// max(c.Generation, newest+1), so the latest save of a session is always the
// one loaded and a generation is never reused. Session names are checked with
// [ValidateSession].
type Memory struct {
	// Keep is the number of generations kept per session; 0 means 3.
	Keep int

	mu       sync.Mutex
	sessions map[string]*memSession
	locks    map[string]struct{}
}

type memSession struct {
	gens   []*Checkpoint // oldest first, at most keep
	newest uint64
}

func (m *Memory) keep() int {
	if m.Keep <= 0 {
		return DefaultKeep
	}
	return m.Keep
}

// Save stores a deep copy of c.
func (m *Memory) Save(ctx context.Context, c *Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c == nil {
		return ErrNilCheckpoint
	}
	if err := ValidateSession(c.Session); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = make(map[string]*memSession)
	}
	s := m.sessions[c.Session]
	if s == nil {
		s = new(memSession)
		m.sessions[c.Session] = s
	}
	// Recycle the generation about to be evicted: it was never handed out
	// (Load returns copies), so its storage is free.
	var dst *Checkpoint
	if keep := m.keep(); len(s.gens) >= keep {
		dst = s.gens[0]
		n := copy(s.gens, s.gens[len(s.gens)-keep+1:])
		clear(s.gens[n:])
		s.gens = s.gens[:n]
	} else {
		dst = new(Checkpoint)
	}
	*dst = *c.Clone()
	dst.Skipped = nil
	dst.Generation = max(c.Generation, s.newest+1)
	s.newest = dst.Generation
	s.gens = append(s.gens, dst)
	return nil
}

// Load returns a deep copy of the newest checkpoint of session, or
// ErrNotFound.
func (m *Memory) Load(ctx context.Context, session string) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[session]
	if s == nil || len(s.gens) == 0 {
		return nil, fmt.Errorf("%w: session %q (in memory)", ErrNotFound, session)
	}
	return s.gens[len(s.gens)-1].Clone(), nil
}

// Lock takes the session's lock, or returns a *LockedError when it is held.
// release gives it back; calling it twice is harmless.
//
// The lock lives in this Memory value, so it excludes runs in this process
// that share it; nothing outside the process can see it.
func (m *Memory) Lock(ctx context.Context, session string) (token uint64, release func() error, err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	if err := ValidateSession(session); err != nil {
		return 0, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, held := m.locks[session]; held {
		return 0, nil, &LockedError{Session: session, Holder: "another run in this process"}
	}
	if m.locks == nil {
		m.locks = make(map[string]struct{})
	}
	m.locks[session] = struct{}{}
	var once sync.Once
	return 1, func() error {
		once.Do(func() {
			m.mu.Lock()
			delete(m.locks, session)
			m.mu.Unlock()
		})
		return nil
	}, nil
}

// Remove deletes every checkpoint of session. Removing a session without
// checkpoints is not an error. The session's generation counter is kept, so a
// later save still gets a generation above every earlier one. A lock on the
// session is not affected.
func (m *Memory) Remove(ctx context.Context, session string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateSession(session); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[session]; s != nil {
		clear(s.gens)
		s.gens = s.gens[:0]
	}
	return nil
}
