package checkpoint

// This file keeps the names of a directory's sessions, sorted, for
// SessionsAfter, so that a page of a viewer's list lists nothing (issue
// 31, item 10): a Dir lists the directory once, on its first page, and
// then follows the sessions journal, to which a Dir appends a line for
// each session it creates or removes.

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

// journalName is the sessions journal of a directory: a line "+NAME\tCRC"
// for each session created (appended before its marker is), "-NAME\tCRC"
// for each removed (after its marker is deleted), CRC the CRC-32C of
// "+NAME" or "-NAME" in hexadecimal, each after an empty line (which ends
// a line a crash tore). Its name is none of a session's
// files. It is never synced: a reader that started before a crash does not
// survive it, and one that starts after lists the directory.
const journalName = ".sessions.journal"

// maxJournalRead bounds what a reader reads of the journal at once.
const maxJournalRead = 16 << 20

// nameCache is what a Dir knows of its directory's sessions: their names,
// sorted, and the files a listing showed of those without an index.
type nameCache struct {
	names   []string           // sorted; replaced, never changed in place
	listed  map[string]*listed // of the listing, by session
	journal os.FileInfo        // the journal read, nil if there was none
	off     int64              // how far it was read
}

// journalPath is the path of the sessions journal.
func (d *Dir) journalPath() string { return filepath.Join(d.dir(), journalName) }

// journal appends a line to the sessions journal: op '+' or '-' for
// session. It reports whether the directory exists (false: it did not,
// and nothing was written). Other failures are ignored: a reader whose
// cache misses a session created meanwhile lists it once it lists the
// directory again (a new Dir).
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
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return true
	}
	f.WriteString(line)
	return true
}

// sessionNames returns the names of the directory's sessions, sorted, and
// what a listing showed of them: on the Dir's first call by listing the
// directory (and again whenever the journal was replaced or shortened),
// then by reading what the journal gained since.
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
	if c == nil || c.journal != nil && (fi == nil || !os.SameFile(c.journal, fi) || fi.Size() < c.off) {
		if c, err = d.listNames(fi); err != nil {
			return nil, err
		}
	}
	if fi != nil && fi.Size() > c.off {
		c = c.follow(d.journalPath(), fi)
	}
	d.names = c
	return c, nil
}

// listNames lists the directory for a new cache; fi is the journal as it
// was before the listing, read from its end on.
func (d *Dir) listNames(fi os.FileInfo) (*nameCache, error) {
	names, err := d.readNames()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: listing %s: %w", d.dir(), err)
	}
	c := &nameCache{listed: make(map[string]*listed), journal: fi}
	for _, l := range listSessions(names) {
		c.names = append(c.names, l.session)
		c.listed[l.session] = l
	}
	if fi != nil {
		c.off = fi.Size()
	}
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
	out := &nameCache{names: c.names, listed: c.listed, journal: fi, off: c.off + int64(end) + 1}
	if c.journal != nil {
		out.journal = c.journal
	}
	names := c.names
	copied := false
	for line := range strings.Lines(string(buf[:end+1])) {
		rec, sum, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok || len(rec) < 2 || strconv.FormatUint(uint64(crc32.Checksum([]byte(rec), castagnoli)), 16) != sum {
			continue // torn by a crash, or not a record
		}
		session := rec[1:]
		if ValidateSession(session) != nil {
			continue
		}
		i, found := slices.BinarySearch(names, session)
		switch {
		case rec[0] == '+' && !found:
			if !copied {
				names, copied = slices.Clone(names), true
			}
			names = slices.Insert(names, i, session)
		case rec[0] == '-' && found:
			if !copied {
				names, copied = slices.Clone(names), true
			}
			names = slices.Delete(names, i, i+1)
		}
	}
	out.names = names
	return out
}

// listedNow returns what the session has on disk, for its row in a list:
// as its index tells it, else as the cache's listing showed it, with
// newer generations looked for by name; nil if neither knows of a file.
func (d *Dir) listedNow(c *nameCache, session string) *listed {
	if gens, corrupt, _, ok := d.indexed(session); ok {
		return &listed{session: session, gens: gens, corrupt: corrupt}
	}
	l := c.listed[session]
	if l == nil {
		// Created since the listing (the journal tells), and without an
		// index (its write failed): the directory is listed for it.
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
		if name == journalName || name == session+markerSuffix || name == session+".lock" {
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
