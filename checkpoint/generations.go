package checkpoint

// This file reads a session's kept generations one by one: its history,
// for tools that show it and for forks.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
)

// Generations lists the envelopes of the kept generations of session,
// oldest first: every field but Engine and State (left nil). Which
// generations are kept is the Dir's retention (Keep, [KeepAll],
// [KeepBest], [MaxBytes]). A session without generations lists none.
//
// Like [Dir.Sessions], it is read-only (no lock, no quarantine, nothing
// created) and reads only each generation's envelope, without verifying
// its checksum. It reads the session's index, not the directory (see Dir,
// Files), so its cost does not depend on the directory's other sessions;
// without an index it lists the directory. A generation whose envelope
// cannot be read (damaged, of another format version, unreadable) is left
// out, as is one pruned while the session is listed; a failure to list
// the directory is returned.
func (d *Dir) Generations(ctx context.Context, session string) ([]*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	gens, err := d.generations(session)
	if err != nil {
		return nil, err
	}
	var out []*Checkpoint
	for _, gen := range gens {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := readEnvelope(filepath.Join(d.dir(), genName(session, gen)), session)
		if err != nil || c.Generation != gen {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// generations returns the generations of session, ascending: as its index
// tells them (see Dir.indexed), else as a listing of the directory shows
// them.
func (d *Dir) generations(session string) ([]uint64, error) {
	if gens, _, _, ok := d.indexed(session); ok {
		return gens, nil
	}
	names, err := d.readNames()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: listing %s: %w", d.dir(), err)
	}
	// Only this session's names are picked out: grouping every session's
	// (listSessions) cost more than the listing itself at 100,000.
	var gens []uint64
	for _, name := range names {
		if gen, kind := parseName(name, session); kind == kindGeneration {
			gens = append(gens, gen)
		}
	}
	slices.Sort(gens)
	return gens, nil
}

// LoadGeneration returns generation gen of session, whole, as Load would
// return it were it the newest (Skipped empty). It is read-only: a damaged
// generation gives a *CorruptError and stays where it is (only Load
// quarantines). A generation that is not kept gives an error matching
// ErrNotFound, and so does a number that is no generation's, 0 or 2^64-1
// (generations run from 1 to 2^64-2: see [Dir]), whatever file has its
// name: Generations never lists such a file either.
func (d *Dir) LoadGeneration(ctx context.Context, session string, gen uint64) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	if !validGeneration(gen) {
		return nil, notAGeneration(gen, session, "in "+d.dir())
	}
	path := filepath.Join(d.dir(), genName(session, gen))
	c, err := readGen(path, session)
	var ce *CorruptError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: generation %d of session %s in %s", ErrNotFound, gen, quoteSession(session), d.dir())
	case errors.As(err, &ce):
		ce.Path, ce.Generation = path, gen
		return nil, ce
	case err != nil:
		return nil, fmt.Errorf("checkpoint: loading generation %d of session %s: %w", gen, quoteSession(session), err)
	case c.Generation != gen:
		return nil, &CorruptError{Path: path, Generation: gen, Err: fmt.Errorf("records generation %d", c.Generation)}
	}
	return c, nil
}

// Generations lists the envelopes of the kept generations of session,
// oldest first: every field but Engine and State (left nil), in memory the
// caller may change. Which generations are kept is the Memory's retention
// (Keep, KeepAll, KeepBest, MaxBytes). A session without generations lists
// none.
func (m *Memory) Generations(ctx context.Context, session string) ([]*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[session]
	if s == nil {
		return nil, nil
	}
	out := make([]*Checkpoint, len(s.gens))
	for i, g := range s.gens {
		c := *g
		c.Engine, c.State, c.Skipped = nil, nil, nil
		out[i] = &c
	}
	return out, nil
}

// LoadGeneration returns a copy of generation gen of session, or an error
// matching ErrNotFound when it is not kept or gen is no generation's
// number (0 or 2^64-1), as [Dir.LoadGeneration] does.
func (m *Memory) LoadGeneration(ctx context.Context, session string, gen uint64) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	if !validGeneration(gen) {
		return nil, notAGeneration(gen, session, "(in memory)")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[session]; s != nil {
		for _, g := range s.gens {
			if g.Generation == gen {
				return g.Clone(), nil
			}
		}
	}
	return nil, fmt.Errorf("%w: generation %d of session %s (in memory)", ErrNotFound, gen, quoteSession(session))
}
