package checkpoint

// This file keeps the names of a directory's sessions, sorted, for
// SessionsAfter, so that a page of a viewer's list lists nothing (issue
// 31, items 10 and 11): a Dir reads the snapshot of the sessions journal
// on its first page (see dir_snapshot.go), or lists the directory if
// there is none to trust, and then follows the sessions journal, to which
// a Dir appends a line for each session it creates or removes.

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// journalName is the sessions journal of a directory: a first line
// "#journal ID" (ID random, see journalHeader), then a line "+NAME\tCRC"
// for each session created (appended, and synced, before its marker is
// created), "-NAME\tCRC" for each removed (after its marker is deleted),
// CRC the CRC-32C of "+NAME" or "-NAME" in hexadecimal, each after an
// empty line (which ends a line a crash tore). Its name is none of a
// session's files.
const journalName = ".sessions.journal"

// maxJournalRead bounds what a reader reads of the journal at once.
const maxJournalRead = 16 << 20

// journalPath is the path of the sessions journal.
func (d *Dir) journalPath() string { return filepath.Join(d.dir(), journalName) }

// journal appends a line to the sessions journal: op '+' or '-' for
// session; a '+' line is synced (so that no crash leaves a marker whose
// line a snapshot's reader misses). It reports whether the directory
// exists (false: it did not, and nothing was written). Other failures are
// ignored: a reader whose cache misses a session created meanwhile lists
// it once it lists the directory again (a new Dir without a snapshot). A
// line that crosses a multiple of compactCheck may rewrite the snapshot
// (see Dir.compactJournal).
func (d *Dir) journal(op byte, session string) bool {
	if d.noIndex {
		return true
	}
	rec := string(op) + session
	// The leading newline ends a line a crash tore, which would otherwise
	// swallow this one.
	line := "\n" + rec + "\t" + strconv.FormatUint(uint64(crc32.Checksum([]byte(rec), castagnoli)), 16) + "\n"
	f, err := os.OpenFile(d.journalPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE|readFlags, 0o600)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return true
	}
	if fi.Size() == 0 {
		line = journalHeader() + line
	}
	if _, err := f.WriteString(line); err != nil {
		return true
	}
	if op == '+' {
		d.fsync(f)
	}
	after, check := d.compactLimits()
	if end := fi.Size() + int64(len(line)); fi.Size()/check != end/check {
		if off, ok := d.snapshotOffset(); ok && end-off >= after {
			d.compactJournal()
		}
	}
	return true
}

// sessionNames returns the names of the directory's sessions, sorted, and
// what a listing showed of them: on the Dir's first call (and again
// whenever the journal was replaced or shortened) from the snapshot, or
// by listing the directory if there is no snapshot to trust (after which
// the snapshot is written), then by reading what the journal gained
// since. A Dir that read compactAfter bytes of the journal past the
// snapshot rewrites it.
func (d *Dir) sessionNames() (*nameCache, error) {
	d.namesMu.Lock()
	defer d.namesMu.Unlock()
	c := d.names
	fi, err := os.Lstat(d.journalPath())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint: reading %s: %w", d.journalPath(), err)
	}
	if err != nil {
		fi = nil
	}
	listed := false
	if c == nil || c.journal != nil && (fi == nil || !os.SameFile(c.journal, fi) || fi.Size() < c.off) {
		if c = d.loadSnapshot(fi); c == nil {
			if c, err = d.listNames(fi); err != nil {
				return nil, err
			}
			listed = true
		}
	}
	if fi != nil && fi.Size() > c.off {
		c = c.follow(d.journalPath(), fi)
	}
	if after, _ := d.compactLimits(); listed || c.off-c.snapOff >= after {
		if d.writeSnapshot(c) {
			c = &nameCache{base: c.materialize(), journal: c.journal, off: c.off, snapOff: c.off}
		}
	}
	d.names = c
	return c, nil
}

// listNames lists the directory for a new cache; fi is the journal as it
// was before the listing, read from its end on. The sessions the listing
// shows (a generation, quarantined file or marker) are joined by those
// the journal, up to its end, last says were created: a session whose
// line came before fi's end and whose marker after the listing.
func (d *Dir) listNames(fi os.FileInfo) (*nameCache, error) {
	names, err := d.readNames()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: listing %s: %w", d.dir(), err)
	}
	d.removeSnapshotTemps(names)
	var b strings.Builder
	for _, l := range listSessions(names) {
		b.WriteString(l.session)
		b.WriteByte('\t')
		b.WriteString(encodeInfo(l))
		b.WriteByte('\n')
	}
	c := &nameCache{base: b.String(), journal: fi}
	ops := make(map[string]byte)
	for _, name := range names {
		if session, ok := strings.CutSuffix(name, markerSuffix); ok && ValidateSession(session) == nil {
			ops[session] = '+'
		}
	}
	if fi != nil {
		c.off = fi.Size()
		if f, _, err := openGen(d.journalPath()); err == nil {
			buf := make([]byte, min(c.off, maxJournalRead))
			n, _ := f.ReadAt(buf, 0)
			f.Close()
			buf = buf[:n]
			buf = buf[:strings.LastIndexByte(string(buf), '\n')+1]
			for session, op := range journalOps(string(buf)) {
				if op == '+' {
					ops[session] = '+'
				}
			}
		}
	}
	c = c.with(ops)
	c.base, c.adds, c.removed = c.materialize(), nil, nil
	return c, nil
}

// follow returns c with the journal at path read from c.off to its end
// (fi), whole lines only: a copy if anything changed.
func (c *nameCache) follow(path string, fi os.FileInfo) *nameCache {
	f, _, err := openGen(path)
	if err != nil {
		return c
	}
	defer f.Close()
	n := min(fi.Size()-c.off, maxJournalRead)
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, c.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return c
	}
	buf = buf[:got]
	end := strings.LastIndexByte(string(buf), '\n')
	if end < 0 {
		return c
	}
	out := c.with(journalOps(string(buf[:end+1])))
	out.off = c.off + int64(end) + 1
	if c.journal == nil {
		out.journal = fi
	}
	return out
}

// listedNow returns what the session has on disk, for its row in a list:
// as its index tells it, else as info (what a listing showed) tells it,
// with newer generations looked for by name; nil if neither knows of a
// file.
func (d *Dir) listedNow(session, info string) *listed {
	if gens, corrupt, _, ok := d.indexed(session); ok {
		return &listed{session: session, gens: gens, corrupt: corrupt}
	}
	l := parseInfo(session, info)
	if l == nil {
		// Known from the journal only: a session a Dir created has its
		// marker before any other file, so without one it has none
		// (created, not yet marked; or removed).
		if _, err := os.Lstat(d.markerPath(session)); errors.Is(err, fs.ErrNotExist) {
			return &listed{session: session}
		}
		// Created since the listing, and without an index (its write
		// failed): the directory is listed for it.
		names, err := d.readNames()
		if err != nil {
			return &listed{session: session}
		}
		if l = listSessionOf(names, session); l == nil {
			return &listed{session: session}
		}
	}
	top := indexTop(l.gens, l.corrupt)
	gens, corrupt, _ := d.probe(session, top)
	if len(gens) == 0 && len(corrupt) == 0 {
		return l
	}
	return &listed{session: session, gens: append(slices.Clone(l.gens), gens...), corrupt: append(slices.Clone(l.corrupt), corrupt...)}
}

// listSessionOf returns the generation and quarantined files of session
// among names, a listing of the directory; nil if it has none.
func listSessionOf(names []string, session string) *listed {
	l := &listed{session: session}
	for _, name := range names {
		switch gen, kind := parseName(name, session); kind {
		case kindGeneration:
			l.gens = append(l.gens, gen)
		case kindCorrupt:
			l.corrupt = append(l.corrupt, quarantined{gen, name})
		}
	}
	if len(l.gens) == 0 && len(l.corrupt) == 0 {
		return nil
	}
	slices.Sort(l.gens)
	return l
}

// onlyFilesOf reports whether names, a listing of the directory, holds no
// file of another session than session: no marker, generation,
// quarantined, temporary or lock file of another (files of other programs
// do not count).
func onlyFilesOf(names []string, session string) bool {
	for _, name := range names {
		if name == journalName || name == snapshotName || isSnapshotTemp(name) || name == session+markerSuffix || name == session+".lock" {
			continue
		}
		if _, kind := parseName(name, session); kind != kindOther {
			continue
		}
		if strings.HasSuffix(name, markerSuffix) || strings.HasSuffix(name, ".lock") {
			return false
		}
		if _, ok := sessionOf(name); ok {
			return false
		}
		if _, ok := tempSession(name); ok {
			return false
		}
	}
	return true
}
