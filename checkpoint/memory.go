package checkpoint

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// DefaultKeep is the number of generations of a session that [Memory] and
// [Dir] keep unless told otherwise.
const DefaultKeep = 3

// Memory keeps checkpoints in memory, the last Keep generations of each
// session (or as KeepAll, KeepBest and MaxBytes say). The zero value is
// ready to use and keeps 3. Safe for concurrent use.
//
// Memory behaves like a store that persists: it keeps what [Marshal] would
// save (not Skipped), copied, so a checkpoint loaded from Memory equals one
// loaded from a [Dir], and it refuses what a Dir refuses (an invalid session
// name, a checkpoint above the size limit, a stale fencing token). Like Dir,
// it gives each save the generation max(c.Generation, newest+1), so the
// latest save of a session is always the one loaded and a generation is
// never reused; a save that would be generation 2^64-1 is refused, as a
// Dir refuses it. Nothing in Memory is ever damaged, so Skipped is always
// empty.
type Memory struct {
	// Keep is the number of generations kept per session; 0 means 3.
	Keep int
	// KeepAll, KeepBest and MaxBytes retain generations as the Dir options
	// [KeepAll], [KeepBest] and [MaxBytes] do: every generation, the best
	// one too, and at most MaxBytes bytes of a session's generations (as
	// [Marshal] would encode them; 0 means no limit).
	KeepAll  bool
	KeepBest bool
	MaxBytes int64

	mu       sync.Mutex
	sessions map[string]*memSession
}

type memSession struct {
	gens   []*Checkpoint // oldest first, at most keep
	newest uint64        // highest generation given; never decreases
	token  uint64        // newest fencing token issued; never decreases
	held   uint64        // token of the current holder of the lock, 0 if none
	spare  []byte        // storage of an evicted state, for the next SaveFrom
}

func (m *Memory) keep() int {
	if m.Keep <= 0 {
		return DefaultKeep
	}
	return m.Keep
}

// session returns the session's record, creating it. m.mu must be held.
func (m *Memory) session(name string) *memSession {
	if m.sessions == nil {
		m.sessions = make(map[string]*memSession)
	}
	s := m.sessions[name]
	if s == nil {
		s = new(memSession)
		m.sessions[name] = s
	}
	return s
}

// Save stores a copy of c. A c with a non-zero Token is refused with a
// *FencedError unless Token is that of the session's lock, held.
func (m *Memory) Save(ctx context.Context, c *Checkpoint) error {
	if err := checkSave(ctx, c); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.store(c, nil, false)
}

// SaveFrom is Save with the state written by state.WriteTo, into memory of
// the Memory's own, instead of taken from c.State, which must be empty. It
// refuses what Save refuses, a stream that fails (returning its error) and
// one that takes the checkpoint above 1 GiB (at the write that would, before
// it is kept), and then keeps nothing. state.WriteTo is called once, without
// the Memory's lock held, and must not keep the writer.
func (m *Memory) SaveFrom(ctx context.Context, c *Checkpoint, state io.WriterTo) error {
	if err := checkStream(c, state); err != nil {
		return err
	}
	if err := checkSave(ctx, c); err != nil {
		return err
	}
	m.mu.Lock()
	s := m.session(c.Session)
	if err := s.fence(c); err != nil {
		m.mu.Unlock()
		return err
	}
	spare := s.spare
	s.spare = nil
	m.mu.Unlock()

	ms := memStreams.Get().(*memStream)
	ms.buf.b = spare[:0]
	ms.sw = stateWriterOf(&ms.buf, c)
	err := stream(state, &ms.sw)
	b := ms.buf.b
	*ms = memStream{}
	memStreams.Put(ms)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(b) == 0 {
		b = nil
	}
	return m.store(c, b, true)
}

// memStream is the writers of a SaveFrom, pooled so that a save allocates
// only what the state needs.
type memStream struct {
	sw  stateWriter
	buf appender
}

var memStreams = sync.Pool{New: func() any { return new(memStream) }}

// appender appends what is written to b.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// fence refuses c unless its token is 0 or that of the lock held.
func (s *memSession) fence(c *Checkpoint) error {
	if c.Token != 0 && c.Token != s.held {
		return &FencedError{Session: c.Session, Token: c.Token, Current: s.token}
	}
	return nil
}

// store keeps c as the session's newest generation, with a copy of c.State,
// or with streamed, which it then owns, when fromStream. m.mu must be held.
func (m *Memory) store(c *Checkpoint, streamed []byte, fromStream bool) error {
	s := m.session(c.Session)
	if err := s.fence(c); err != nil {
		return err
	}
	// As in a Dir, no save is generation 2^64-1: newest+1 would wrap.
	gen, err := nextGeneration(c.Generation, s.newest)
	if err != nil {
		return fmt.Errorf("checkpoint: saving session %s (in memory): %w", quoteSession(c.Session), err)
	}
	ret := m.retention()
	if !ret.plain() {
		m.storeRetained(s, c, gen, streamed, fromStream, ret)
		return nil
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
	engine, state := dst.Engine, dst.State
	*dst = *c
	dst.Engine = copyInto(engine, c.Engine)
	if fromStream {
		dst.State = streamed
		if s.spare == nil {
			s.spare = state[:0]
		}
	} else {
		dst.State = copyInto(state, c.State)
	}
	dst.Skipped = nil
	dst.Generation = gen
	s.newest = gen
	s.gens = append(s.gens, dst)
	return nil
}

// copyInto returns a copy of src, in buf when it is large enough. It keeps
// the difference between nil and empty.
func copyInto(buf, src []byte) []byte {
	if src == nil {
		return nil
	}
	return append(buf[:0], src...)
}

// Load returns a copy of the newest checkpoint of session, or an error
// matching ErrNotFound.
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
		return nil, fmt.Errorf("%w: session %s (in memory)", ErrNotFound, quoteSession(session))
	}
	return s.gens[len(s.gens)-1].Clone(), nil
}

// Lock takes the session's lock and returns its fencing token, one above
// the previous token of the session (the first is 1), or returns a
// *LockedError when the lock is held. release gives the lock back; calling
// it twice is harmless.
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
	s := m.session(session)
	if s.held != 0 {
		return 0, nil, &LockedError{Session: session, Holder: "another run in this process"}
	}
	s.token++
	s.held = s.token
	token = s.token
	var once sync.Once
	return token, func() error {
		once.Do(func() {
			m.mu.Lock()
			if s.held == token {
				s.held = 0
			}
			m.mu.Unlock()
		})
		return nil
	}, nil
}

// Remove deletes every checkpoint of session. Removing a session without
// checkpoints is not an error. The session's generation and token counters
// are kept, so later saves and locks still number above every earlier one,
// and a lock on the session is not affected.
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
		s.spare = nil
	}
	return nil
}

// retention returns the retention of m's fields.
func (m *Memory) retention() retention {
	return retention{all: m.KeepAll, best: m.KeepBest, maxBytes: max(m.MaxBytes, 0)}
}

// storeRetained is store under a retention other than the newest Keep:
// it keeps c as generation gen, with a copy of its state or streamed, then
// prunes as ret says. m.mu must be held and c fenced.
func (m *Memory) storeRetained(s *memSession, c *Checkpoint, gen uint64, streamed []byte, fromStream bool, ret retention) {
	dst := c.Clone()
	if fromStream {
		dst.State = streamed
	}
	dst.Skipped = nil
	dst.Generation = gen
	s.newest = gen
	s.gens = append(s.gens, dst)
	gens := make([]uint64, len(s.gens))
	for i, g := range s.gens {
		gens[i] = g.Generation
	}
	drop := ret.drop(gens, m.keep(), dst.BestGeneration, func(i int) int64 {
		n, _ := encodedSize(s.gens[i], int64(len(s.gens[i].State)))
		return n
	})
	kept := s.gens[:0]
	for i, g := range s.gens {
		if !drop[i] {
			kept = append(kept, g)
		}
	}
	clear(s.gens[len(kept):])
	s.gens = kept
}
