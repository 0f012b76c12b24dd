package checkpoint

// This file lists the sessions of a store, for tools that watch loops.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"iter"
	"path/filepath"
	"slices"
	"strings"
)

// Sessions lists the sessions of the directory, in the order of their names,
// each as the envelope of its newest readable generation: every field but
// Engine and State (left nil), with Skipped set as [Dir.Load] sets it. It
// is meant for tools that watch loops, such as an inspector, and may run
// while loops save.
//
// Listing is read-only: it takes no lock (so it works on a session that is
// running), quarantines nothing and creates nothing; a missing directory
// lists nothing. Of each generation it reads the header and the envelope,
// never the engine record or the state, so it costs a few small reads per
// session whatever the size of its checkpoints. For the same reason the
// checksum, which covers the whole file, is not verified (except to tell a
// record of another format version from damage): damage inside an envelope
// whose frame and lengths are intact goes unnoticed here, and [Dir.Load] or
// [Unmarshal] of the file finds it.
//
// The directory is listed when the iteration starts; ctx is checked before
// each session. Each session yields a non-nil checkpoint with its Session
// set and an error:
//
//   - nil, with Status and the other envelope fields set: the newest
//     readable generation, after any damaged newer ones, whose generations
//     Skipped lists (newest first), as a Load would fall back to it;
//   - a *CorruptError (matching ErrCorrupt) when no generation is readable
//     because all are damaged, or only quarantined ones remain: the
//     checkpoint has only Session and Skipped (the damaged generations) set;
//   - another error, such as a *VersionError or a permission error, that
//     keeps the newest generation from being read, as Load would return it
//     (the checkpoint again has only Session and Skipped set).
//
// A failure to list the directory, or ctx's end, yields a nil checkpoint and
// the error, and ends the sequence. A session whose files all disappear
// while it is listed (removed by another process) is left out. Files that
// are not generations of a valid session name ([ValidateSession]) are
// ignored, as are temporary and lock files.
func (d *Dir) Sessions(ctx context.Context) iter.Seq2[*Checkpoint, error] {
	return func(yield func(*Checkpoint, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		d.sessionsAfter(ctx, "", yield)
	}
}

// SessionsAfter is [Dir.Sessions] from a name on: the sessions whose names
// sort after after ("" lists them all), without listing the directory,
// so that a page of a viewer's list costs the envelopes of its rows,
// whatever the number of sessions, the first page a process serves
// included (issue 31, items 10 and 11). The Dir's first call reads the
// snapshot of the sessions' names (the file ".sessions.index") and what
// the sessions journal (".sessions.journal", a line for each session a
// Dir created or removed) gained past it; without a snapshot it can trust
// (missing, damaged, or made of another journal), it lists the directory,
// and writes the snapshot for the next Dir (see Dir, Files: the snapshot,
// and the journal's first line in a directory that has sessions and no
// journal, are the only writes SessionsAfter makes; their failure, in a
// directory the process cannot write, is ignored). Later calls read what the journal
// gained since (the snapshot is read again should the journal be
// replaced or shortened). Each row's generations are read from the
// session's index (see Dir, Files), else from what the listing that made
// the snapshot showed, with newer generations looked for by name. A
// session that a Dir did not create (an earlier version's, or one whose
// files were put there by hand) after the snapshot was made is not listed
// by it until a Dir locks the session: Sessions lists it.
func (d *Dir) SessionsAfter(ctx context.Context, after string) iter.Seq2[*Checkpoint, error] {
	return func(yield func(*Checkpoint, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if d.noIndex {
			d.sessionsAfter(ctx, after, yield)
			return
		}
		c, err := d.sessionNames()
		if err != nil {
			yield(nil, err)
			return
		}
		for name, info := range c.after(after) {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if ValidateSession(name) != nil {
				continue // in a snapshot written by hand
			}
			cp, err := d.envelope(d.listedNow(name, info))
			if cp == nil {
				continue // gone
			}
			if !yield(cp, err) {
				return
			}
		}
	}
}

// sessionsAfter is Sessions from a name on, listing the directory.
func (d *Dir) sessionsAfter(ctx context.Context, after string, yield func(*Checkpoint, error) bool) {
	names, err := d.readNames()
	if err != nil {
		yield(nil, fmt.Errorf("checkpoint: listing %s: %w", d.dir(), err))
		return
	}
	list := listSessions(names)
	if after != "" {
		i, _ := slices.BinarySearchFunc(list, after, func(l *listed, name string) int { return strings.Compare(l.session, name) })
		for i < len(list) && list[i].session <= after {
			i++
		}
		list = list[i:]
	}
	for _, l := range list {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		c, err := d.envelope(l)
		if c == nil {
			continue // gone
		}
		if !yield(c, err) {
			return
		}
	}
}

// listed is what a listing of the directory shows of one session.
type listed struct {
	session string
	gens    []uint64 // ascending
	corrupt []quarantined
}

// listSessions groups the generation and quarantined files among names by
// session, in the order of the session names.
func listSessions(names []string) []*listed {
	bySession := make(map[string]*listed)
	for _, name := range names {
		session, ok := sessionOf(name)
		if !ok {
			continue
		}
		gen, kind := parseName(name, session)
		if kind != kindGeneration && kind != kindCorrupt {
			continue
		}
		l := bySession[session]
		if l == nil {
			l = &listed{session: session}
			bySession[session] = l
		}
		if kind == kindGeneration {
			l.gens = append(l.gens, gen)
		} else {
			l.corrupt = append(l.corrupt, quarantined{gen, name})
		}
	}
	out := make([]*listed, 0, len(bySession))
	for _, l := range bySession {
		slices.Sort(l.gens)
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *listed) int { return strings.Compare(a.session, b.session) })
	return out
}

// sessionOf returns the session a generation or quarantined file name
// belongs to: what precedes ".<20 digits>.ckpt", if that is a valid session
// name.
func sessionOf(name string) (string, bool) {
	i := strings.LastIndex(name, ".ckpt")
	if i < genDigits+1 || name[i-genDigits-1] != '.' {
		return "", false
	}
	session := name[:i-genDigits-1]
	if ValidateSession(session) != nil {
		return "", false
	}
	return session, true
}

// envelope reads the envelope of the session's newest readable generation,
// read-only, as Sessions describes. It returns nil if the session's files
// are all gone.
func (d *Dir) envelope(l *listed) (*Checkpoint, error) {
	var damaged []*CorruptError
	var skipped []uint64
	skip := func(above uint64) []uint64 {
		out := slices.Clone(skipped)
		for _, q := range l.corrupt {
			if q.gen > above {
				out = append(out, q.gen)
			}
		}
		if len(out) == 0 {
			return nil
		}
		slices.Sort(out)
		out = slices.Compact(out)
		slices.Reverse(out)
		return out
	}
	for i := len(l.gens) - 1; i >= 0; i-- {
		gen := l.gens[i]
		path := filepath.Join(d.dir(), genName(l.session, gen))
		c, err := readEnvelope(path, l.session)
		var ce *CorruptError
		switch {
		case err == nil:
			c.Skipped = skip(c.Generation)
			return c, nil
		case errors.Is(err, fs.ErrNotExist):
			// Pruned since the listing.
		case errors.As(err, &ce):
			ce.Path, ce.Generation = path, gen
			damaged = append(damaged, ce)
			skipped = append(skipped, gen)
		default:
			return &Checkpoint{Session: l.session, Skipped: skip(gen)},
				fmt.Errorf("checkpoint: listing session %s: %w", quoteSession(l.session), err)
		}
	}
	c := &Checkpoint{Session: l.session, Skipped: skip(0)}
	if len(damaged) > 0 {
		ce := damaged[0]
		if len(damaged) > 1 {
			ce.Err = fmt.Errorf("%w; and %d older generations damaged", ce.Err, len(damaged)-1)
		}
		return c, ce
	}
	if len(l.corrupt) > 0 {
		return c, d.quarantinedError(l.corrupt)
	}
	return nil, nil
}

// readEnvelope reads the envelope of the generation file at path: its
// header, fixed fields and strings, not its engine record or state. The
// checksum is verified only for a record of another version, to tell it
// from damage.
func readEnvelope(path, session string) (*Checkpoint, error) {
	f, size, _, version, recLen, err := openFrame(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !known(version) {
		// Only an intact record of another version is not damage.
		h := crc32.New(castagnoli)
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, size-crcSize)); err != nil {
			return nil, readErr(err)
		}
		var sum [crcSize]byte
		if _, err := f.ReadAt(sum[:], size-crcSize); err != nil {
			return nil, readErr(err)
		}
		if h.Sum32() != binary.LittleEndian.Uint32(sum[:]) {
			return nil, &CorruptError{Err: errChecksum}
		}
		return nil, &VersionError{Version: int(version)}
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, headerSize, int64(recLen)), 512)
	left := recLen
	fixedLen, strs := layout(version)
	if left < fixedLen {
		return nil, malformed("shorter than its fixed fields")
	}
	var fixed [recordFixed3]byte
	if _, err := io.ReadFull(r, fixed[:fixedLen]); err != nil {
		return nil, readErr(err)
	}
	left -= fixedLen
	c, err := decodeFixed(fixed[:fixedLen])
	if err != nil {
		return nil, err
	}
	// length reads the next length and checks it against what is left.
	length := func() (int, error) {
		var b [4]byte
		if left < len(b) {
			return 0, malformed("a length beyond its end")
		}
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, readErr(err)
		}
		left -= len(b)
		n := binary.LittleEndian.Uint32(b[:])
		if uint64(n) > uint64(left) {
			return 0, malformed("a length beyond its end")
		}
		return int(n), nil
	}
	fields := c.stringFields()
	for _, field := range fields[:strs] {
		n, err := length()
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, readErr(err)
		}
		left -= n
		*field = string(b)
	}
	engine, err := length() // the engine record itself is not read
	if err != nil {
		return nil, err
	}
	if engine != left {
		return nil, malformed("trailing bytes")
	}
	if err := checkVersion(c, version); err != nil {
		return nil, err
	}
	if c.Session != session {
		return nil, &CorruptError{Err: fmt.Errorf("records session %s, not %s", quoteSession(c.Session), quoteSession(session))}
	}
	return c, nil
}

// Sessions lists the sessions of m that have checkpoints, in the order of
// their names, each as the envelope of its newest checkpoint: every field
// but Engine and State (left nil). Nothing in Memory is damaged, so every
// error is nil and Skipped empty, except that ctx's end yields a nil
// checkpoint and ctx's error and ends the sequence. The sessions are
// copied when the iteration starts; no lock is taken.
func (m *Memory) Sessions(ctx context.Context) iter.Seq2[*Checkpoint, error] {
	return func(yield func(*Checkpoint, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		m.mu.Lock()
		list := make([]*Checkpoint, 0, len(m.sessions))
		for _, s := range m.sessions {
			if len(s.gens) == 0 {
				continue
			}
			c := *s.gens[len(s.gens)-1]
			c.Engine, c.State, c.Skipped = nil, nil, nil
			list = append(list, &c)
		}
		m.mu.Unlock()
		slices.SortFunc(list, func(a, b *Checkpoint) int { return strings.Compare(a.Session, b.Session) })
		for _, c := range list {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}
