package checkpoint

// This file keeps each session's index in its marker, so that reading one
// session (Load, Generations, a row of Sessions) lists only the session,
// never the directory (issue 31, item 10): a session page costs the same
// at 100,000 sessions as at 100.

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// indexHeader starts a marker that holds the session's index: which of its
// generation and quarantined files it has (see Dir, Files). An empty
// marker, as a version without indexes wrote it, holds none.
const indexHeader = "refine session index 1\n"

// maxIndex bounds what is read of a marker: a longer one holds no index.
const maxIndex = 1 << 20

// maxProbe bounds the generations above an index's newest that a reader
// looks for by name (see Dir.indexed); more, and the directory is listed.
const maxProbe = 64

// encodeIndex returns the index of session with the generations gens
// (ascending) and the quarantined files corrupt: the header, a line
// "session NAME", a line "g A B"
// for each run of consecutive generations A to B, a line "q G NAME" for
// each quarantined file, and a line "crc C", the CRC-32C of what precedes
// it, in hexadecimal.
func encodeIndex(session string, gens []uint64, corrupt []quarantined) []byte {
	b := []byte(indexHeader)
	b = append(b, "session "...)
	b = append(b, session...)
	b = append(b, '\n')
	for i := 0; i < len(gens); {
		j := i
		for j+1 < len(gens) && gens[j+1] == gens[j]+1 {
			j++
		}
		b = append(b, "g "...)
		b = strconv.AppendUint(b, gens[i], 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, gens[j], 10)
		b = append(b, '\n')
		i = j + 1
	}
	for _, q := range corrupt {
		b = append(b, "q "...)
		b = strconv.AppendUint(b, q.gen, 10)
		b = append(b, ' ')
		b = append(b, q.name...)
		b = append(b, '\n')
	}
	sum := crc32.Checksum(b, castagnoli)
	b = append(b, "crc "...)
	b = strconv.AppendUint(b, uint64(sum), 16)
	return append(b, '\n')
}

// errNoIndex is parseIndex's error for a marker that holds no index.
var errNoIndex = errors.New("no index")

// parseIndex reads the index of session in data. Anything but an index
// encodeIndex wrote for session, whole (its CRC holding), is errNoIndex:
// an empty marker, a torn one, a foreign one. Every generation it gives
// is a generation number (validGeneration), every quarantined name one of
// the session's (parseName).
func parseIndex(data []byte, session string) (gens []uint64, corrupt []quarantined, err error) {
	body, ok := strings.CutPrefix(string(data), indexHeader)
	if !ok {
		return nil, nil, errNoIndex
	}
	i := strings.LastIndex(body, "crc ")
	if i < 0 || (i > 0 && body[i-1] != '\n') {
		return nil, nil, errNoIndex
	}
	sum, ok := strings.CutSuffix(body[i+len("crc "):], "\n")
	if !ok {
		return nil, nil, errNoIndex
	}
	want, err := strconv.ParseUint(sum, 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(data[:len(indexHeader)+i], castagnoli) {
		return nil, nil, errNoIndex
	}
	first, rest, _ := strings.Cut(body[:i], "\n")
	if first != "session "+session {
		return nil, nil, errNoIndex
	}
	for line := range strings.Lines(rest) {
		line = strings.TrimSuffix(line, "\n")
		kind, rest, _ := strings.Cut(line, " ")
		a, b, _ := strings.Cut(rest, " ")
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil || !validGeneration(n) {
			return nil, nil, errNoIndex
		}
		switch kind {
		case "g":
			m, err := strconv.ParseUint(b, 10, 64)
			if err != nil || m < n || !validGeneration(m) || len(gens) > 0 && n <= gens[len(gens)-1] || m-n >= maxIndex {
				return nil, nil, errNoIndex
			}
			for g := n; ; g++ {
				gens = append(gens, g)
				if g == m {
					break
				}
			}
			if len(gens) > maxIndex {
				return nil, nil, errNoIndex
			}
		case "q":
			if g, k := parseName(b, session); k != kindCorrupt || g != n {
				return nil, nil, errNoIndex
			}
			corrupt = append(corrupt, quarantined{n, b})
		default:
			return nil, nil, errNoIndex
		}
	}
	return gens, corrupt, nil
}

// readIndex reads the index in the session's marker, which must be a
// regular file (no link followed); errNoIndex if it holds none.
func (d *Dir) readIndex(session string) ([]uint64, []quarantined, error) {
	f, size, err := openGen(d.markerPath(session))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if size == 0 || size > maxIndex {
		return nil, nil, errNoIndex // an earlier version's marker, or not an index
	}
	data := make([]byte, size)
	n, err := io.ReadFull(f, data)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return nil, nil, errNoIndex // shortened while read
	}
	if err != nil {
		return nil, nil, err
	}
	return parseIndex(data[:n], session)
}

// indexed returns the session's generations (ascending) and quarantined
// files as its index tells them, without listing the directory, and
// whether it could: false when the marker holds no index (a version
// without indexes, a torn write), and the caller lists the directory.
//
// The index lists every file of the session on disk up to its newest
// generation, and perhaps more (a generation pruned since, or one whose
// save failed, stays listed until the index is next written; its reader
// finds no file). The generations above its newest follow one another,
// each found by name (a quarantined one, "….corrupt", continues the
// chain): a save writes the index before its rename whenever a reader
// could not find its generation so (see Dir.indexFor), and the directory
// sync that makes the generation durable makes that index durable too,
// before the prune that could break the chain. A quarantined file the
// index names but that is gone is left out.
//
// reach is the newest generation the index and the look-up by name reached:
// a save of reach+1 is found by name by a reader of this index.
func (d *Dir) indexed(session string) (gens []uint64, corrupt []quarantined, reach uint64, ok bool) {
	if d.noIndex {
		return nil, nil, 0, false
	}
	gens, listed, err := d.readIndex(session)
	if err != nil {
		return nil, nil, 0, false
	}
	top := uint64(0)
	if len(gens) > 0 {
		top = gens[len(gens)-1]
	}
	for _, q := range listed {
		top = max(top, q.gen)
		if _, err := os.Lstat(filepath.Join(d.dir(), q.name)); err == nil {
			corrupt = append(corrupt, q)
		}
	}
	newer, quarantinedNewer, ok := d.probe(session, top)
	if !ok {
		return nil, nil, 0, false
	}
	gens = append(gens, newer...)
	corrupt = append(corrupt, quarantinedNewer...)
	return gens, corrupt, indexTop(gens, corrupt), true
}

// probe looks for the session's generations above top by name, one after
// another, until one has neither its file nor a quarantined one
// ("….corrupt"): false if it found more than maxProbe.
func (d *Dir) probe(session string, top uint64) (gens []uint64, corrupt []quarantined, ok bool) {
	for i := 0; validGeneration(top + 1); i++ {
		path := filepath.Join(d.dir(), genName(session, top+1))
		if _, err := os.Lstat(path); err == nil {
			gens = append(gens, top+1)
		} else if _, err := os.Lstat(path + ".corrupt"); err == nil {
			corrupt = append(corrupt, quarantined{top + 1, filepath.Base(path) + ".corrupt"})
		} else {
			break
		}
		if i == maxProbe {
			return nil, nil, false
		}
		top++
	}
	return gens, corrupt, true
}

// writeIndex replaces the session's marker with the index of gens and
// corrupt: written to a temporary file, renamed over the marker. With
// durable, the file and then the directory are synced before it returns,
// so that the index is on disk before anything that follows; without, the
// next sync of the directory makes it so (a save's, after its rename). A
// marker that is not a regular file (a link or directory planted there,
// which holds no index to a reader) is left as it is when it cannot be
// replaced. When a regular marker cannot be replaced, it is emptied, so
// that readers list the directory rather than trust an index that no
// longer lists everything; an error is returned only if that fails too.
func (d *Dir) writeIndex(session string, gens []uint64, corrupt []quarantined, durable bool) error {
	_, err := d.tryIndex(session, gens, corrupt, durable)
	return err
}

// tryIndex is writeIndex, reporting whether the index was written (not
// emptied, nor left as it was).
func (d *Dir) tryIndex(session string, gens []uint64, corrupt []quarantined, durable bool) (bool, error) {
	if d.noIndex {
		return false, nil
	}
	err := d.replaceIndex(session, encodeIndex(session, gens, corrupt), durable)
	if err == nil {
		return true, nil
	}
	path := d.markerPath(session)
	if fi, lerr := os.Lstat(path); lerr != nil || !fi.Mode().IsRegular() {
		return false, nil // a reader finds no index there
	}
	f, terr := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|readFlags, 0)
	if terr == nil {
		terr = f.Close()
	}
	if terr != nil {
		return false, fmt.Errorf("writing the index of session %s: %w (and could not empty it: %v)", quoteSession(session), err, terr)
	}
	return false, nil
}

// replaceIndex writes data to a temporary file and renames it over the
// session's marker.
func (d *Dir) replaceIndex(session string, data []byte, durable bool) error {
	if err := d.fail("index"); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.dir(), "."+session+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && durable {
		err = d.fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, d.markerPath(session))
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if durable {
		if err := syncDir(d.dir(), d.fsync); err != nil {
			return fmt.Errorf("syncing directory: %w", err)
		}
	}
	return nil
}

// indexTop is the newest generation an index of gens and corrupt names.
func indexTop(gens []uint64, corrupt []quarantined) uint64 {
	top := uint64(0)
	if len(gens) > 0 {
		top = slices.Max(gens)
	}
	for _, q := range corrupt {
		top = max(top, q.gen)
	}
	return top
}

// reindex makes the session's index name the files s lists, as a listing
// of the directory just found them (Lock's): an index that lists the same
// is left as it is, another one (stale, torn, empty, or missing, for a
// session an earlier version wrote) is replaced, synced, so that readers
// stop listing the directory for the session. Failures are left for a
// later save: readers list the directory meanwhile.
func (d *Dir) reindex(session string, s *dirSession) {
	s.indexed = false
	if d.noIndex || !s.scanned {
		return
	}
	top := indexTop(s.gens, s.corrupt)
	// An index whose readers find every file listed (and perhaps some
	// pruned since) is left as it is.
	if raw, _, err := d.readIndex(session); err == nil {
		gens, corrupt, _, ok := d.indexed(session)
		if ok && containsAll(gens, s.gens) && containsAllQ(corrupt, s.corrupt) {
			s.indexed, s.indexTop = true, 0
			if len(raw) > 0 {
				s.indexTop = raw[len(raw)-1]
			}
			return
		}
	}
	if _, err := os.Lstat(d.markerPath(session)); err != nil {
		if len(s.gens) == 0 && len(s.corrupt) == 0 {
			return // no file, and no marker: nothing to index
		}
		// A session an earlier version wrote gets its marker: journaled
		// first, as a new session is (see Dir.SessionsAfter).
		d.journal('+', session)
	}
	if written, err := d.tryIndex(session, s.gens, s.corrupt, true); err == nil && written {
		s.indexed, s.indexTop = true, top
	}
}

// containsAll reports whether have holds every generation of want.
func containsAll(have, want []uint64) bool {
	for _, g := range want {
		if !slices.Contains(have, g) {
			return false
		}
	}
	return true
}

// containsAllQ reports whether have names every quarantined file of want.
func containsAllQ(have, want []quarantined) bool {
	for _, q := range want {
		if !slices.Contains(have, q) {
			return false
		}
	}
	return true
}

// indexFor writes the index a save of c as generation gen needs before
// its rename, if any: a reader of the index on disk, whose newest is
// s.indexTop, finds the generations above it by name as long as they
// follow one another, so a save of the next generation leaves the index
// as it is unless its prune would delete a generation above s.indexTop
// (breaking the chain a reader follows), or the chain would grow past
// half the look-up's bound. Such a rewrite needs no sync of its own: the
// save's directory sync makes it durable before the prune runs. A save
// whose generation is not the next (a jump), or one of a session whose
// index on disk this Dir does not know, syncs the index first.
func (d *Dir) indexFor(c *Checkpoint, s *dirSession, gen uint64) error {
	s.indexWritten = false
	gens := append(slices.Clip(s.gens), gen)
	// The chain a reader follows from s.indexTop reaches s.newest, the
	// newest generation on disk (as far as this Dir knows), and so gen if
	// it is the next.
	if !s.indexed || gen != s.newest+1 || indexTop(s.gens, s.corrupt) != s.newest {
		written, err := d.tryIndex(c.Session, gens, s.corrupt, true)
		if err != nil {
			return err
		}
		// Unless written, the marker holds no index: the next save
		// writes it, synced.
		s.indexed, s.indexTop, s.indexWritten = written, gen, written
		return nil
	}
	// Under MaxBytes the prune depends on the new file's size: rewritten.
	rewrite := gen-s.indexTop > maxProbe/2 || d.retain.maxBytes > 0
	if p := d.pruning(c.Session, gens, c.BestGeneration); !rewrite && !p.none() {
		for i, g := range gens {
			if p.at(i) && g > s.indexTop {
				rewrite = true
				break
			}
		}
	}
	if !rewrite {
		return nil
	}
	written, err := d.tryIndex(c.Session, gens, s.corrupt, false)
	if err != nil {
		return err
	}
	s.indexed, s.indexWritten = written, written
	return nil
}
