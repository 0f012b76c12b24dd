package checkpoint

// This file keeps the snapshot of the sessions journal: the sorted names
// of a directory's sessions, as of an offset of the journal, so that a
// Dir's first page of SessionsAfter reads a file of names rather than
// listing the directory (issue 31, item 11's goal: a viewer process's
// first list page costs at 100,000 sessions what it costs at 100).

import (
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// snapshotName is the snapshot of the sessions journal (see Dir, Files):
// snapshotHeader, a line "journal OFF N CRC" (the journal it covers: up to
// offset OFF, the file whose first N bytes have the CRC-32C CRC), a line
// "NAME" or "NAME\tINFO" for each session, sorted by name, and a line
// "crc C", the CRC-32C of what precedes it, in hexadecimal. INFO, for a
// session a listing of the directory showed, is "l" and its generations
// (comma-separated, ascending), then a tab and the name of each
// quarantined file. Its name is none of a session's files.
const snapshotName = ".sessions.index"

// snapshotHeader starts a snapshot.
const snapshotHeader = "refine sessions index 1\n"

// snapshotTemp starts the name of a snapshot's temporary file (a name no
// session's temporary file has: it does not end in ".tmp").
const snapshotTemp = snapshotName + ".tmp"

// journalHead is how many of the journal's first bytes identify it (its
// first line: a random identifier, see Dir.journal).
const journalHead = 64

// compactAfter is how far the journal may run past its snapshot before a
// Dir rewrites the snapshot: a reader that reads that much of it, or a
// writer whose line crosses a multiple of compactCheck past it.
const (
	compactAfter = 64 << 10
	compactCheck = 16 << 10
)

// maxSnapshot bounds the snapshot read: a larger one is not used.
const maxSnapshot = 256 << 20

// snapshotPath is the path of the snapshot.
func (d *Dir) snapshotPath() string { return filepath.Join(d.dir(), snapshotName) }

// journalHeader returns the first line of a new journal: a random
// identifier, so that a journal deleted and written anew does not start
// as the one a snapshot covers.
func journalHeader() string {
	return "\n#journal " + strconv.FormatUint(rand.Uint64(), 16) + "\n"
}

// encodeSnapshot returns the snapshot of c, which covers its journal up to
// off, the journal's first headLen bytes having the CRC head.
func encodeSnapshot(c *nameCache, off int64, headLen int, head uint32) []byte {
	n := len(snapshotHeader) + 64
	for i, name := range c.names {
		n += len(name) + len(c.info[i]) + 2
	}
	b := make([]byte, 0, n+16)
	b = append(b, snapshotHeader...)
	b = append(b, "journal "...)
	b = strconv.AppendInt(b, off, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(headLen), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(head), 16)
	b = append(b, '\n')
	for i, name := range c.names {
		b = append(b, name...)
		if c.info[i] != "" {
			b = append(b, '\t')
			b = append(b, c.info[i]...)
		}
		b = append(b, '\n')
	}
	sum := crc32.Checksum(b, castagnoli)
	b = append(b, "crc "...)
	b = strconv.AppendUint(b, uint64(sum), 16)
	return append(b, '\n')
}

// errNoSnapshot is parseSnapshot's error for a file that holds no snapshot.
var errNoSnapshot = errors.New("no snapshot")

// snapshot is a snapshot as read.
type snapshot struct {
	names, info []string
	off         int64
	headLen     int
	head        uint32
}

// parseSnapshot reads a snapshot encodeSnapshot wrote, whole (its CRC
// holding, its names sorted); anything else is errNoSnapshot. The names
// are not validated (see Dir.SessionsAfter: a row's is).
func parseSnapshot(data []byte) (*snapshot, error) {
	s := string(data)
	body, ok := strings.CutPrefix(s, snapshotHeader)
	if !ok || !strings.HasSuffix(body, "\n") {
		return nil, errNoSnapshot
	}
	i := strings.LastIndex(body, "\ncrc ")
	if i < 0 {
		return nil, errNoSnapshot
	}
	want, err := strconv.ParseUint(body[i+len("\ncrc "):len(body)-1], 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(data[:len(snapshotHeader)+i+1], castagnoli) {
		return nil, errNoSnapshot
	}
	first, rest, _ := strings.Cut(body[:i+1], "\n")
	f := strings.Fields(first)
	if len(f) != 4 || f[0] != "journal" {
		return nil, errNoSnapshot
	}
	off, err1 := strconv.ParseInt(f[1], 10, 64)
	headLen, err2 := strconv.Atoi(f[2])
	head, err3 := strconv.ParseUint(f[3], 16, 32)
	if err1 != nil || err2 != nil || err3 != nil || off < 0 || headLen < 0 || headLen > journalHead {
		return nil, errNoSnapshot
	}
	n := strings.Count(rest, "\n")
	out := &snapshot{names: make([]string, 0, n), info: make([]string, 0, n), off: off, headLen: headLen, head: uint32(head)}
	for rest != "" {
		j := strings.IndexByte(rest, '\n')
		line := rest[:j]
		rest = rest[j+1:]
		name, info, _ := strings.Cut(line, "\t")
		if k := len(out.names); name == "" || k > 0 && out.names[k-1] >= name {
			return nil, errNoSnapshot
		}
		out.names = append(out.names, name)
		out.info = append(out.info, info)
	}
	return out, nil
}

// loadSnapshot returns the cache the snapshot on disk gives, if it covers
// the journal fi (the same file, by its first bytes, at least as long as
// the offset it covers); nil if there is none, or it is damaged or stale
// (the journal replaced or shortened since).
func (d *Dir) loadSnapshot(fi os.FileInfo) *nameCache {
	if fi == nil {
		return nil
	}
	f, size, err := openGen(d.snapshotPath())
	if err != nil {
		return nil
	}
	defer f.Close()
	if size > maxSnapshot {
		return nil
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil
	}
	snap, err := parseSnapshot(data)
	if err != nil || fi.Size() < snap.off {
		return nil
	}
	head, err := readHead(d.journalPath(), fi, snap.headLen)
	if err != nil || crc32.Checksum(head, castagnoli) != snap.head {
		return nil
	}
	return &nameCache{names: snap.names, info: snap.info, journal: fi, off: snap.off, snapOff: snap.off}
}

// readHead returns the first n bytes of the journal at path, which must be
// the file fi.
func readHead(path string, fi os.FileInfo, n int) ([]byte, error) {
	f, _, err := openGen(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !os.SameFile(now, fi) {
		return nil, errNoSnapshot
	}
	head := make([]byte, n)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, err
	}
	return head, nil
}

// writeSnapshot writes the snapshot of c, whose journal it covers up to
// c.off, and reports whether it did: the journal is synced first (what
// the snapshot covers of it must survive what it survives), and created,
// with its first line, if c was listed without one; the snapshot is
// written to a temporary file, synced, renamed over the snapshot and the
// directory synced. Nothing is written for a directory without sessions
// or journal, nor when the journal is no longer c's. Failures are
// ignored: a reader without a snapshot lists the directory.
func (d *Dir) writeSnapshot(c *nameCache) bool {
	if len(c.names) == 0 && c.journal == nil {
		return false
	}
	if d.fail("snapshot") != nil {
		return false
	}
	j, err := os.OpenFile(d.journalPath(), os.O_RDWR|os.O_APPEND|os.O_CREATE|readFlags, 0o600)
	if err != nil {
		return false
	}
	defer j.Close()
	fi, err := j.Stat()
	if err != nil || !fi.Mode().IsRegular() || c.journal != nil && !os.SameFile(fi, c.journal) {
		return false
	}
	size := fi.Size()
	if size == 0 {
		h := journalHeader()
		if _, err := j.WriteString(h); err != nil {
			return false
		}
		size = int64(len(h))
	}
	if size < c.off || d.fsync(j) != nil {
		return false
	}
	head := make([]byte, min(size, journalHead))
	if _, err := j.ReadAt(head, 0); err != nil {
		return false
	}
	data := encodeSnapshot(c, c.off, len(head), crc32.Checksum(head, castagnoli))
	f, err := os.CreateTemp(d.dir(), snapshotTemp+"*")
	if err != nil {
		return false
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = d.fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.fail("snapshot rename")
	}
	if err == nil {
		err = os.Rename(tmp, d.snapshotPath())
	}
	if err != nil {
		os.Remove(tmp)
		return false
	}
	return syncDir(d.dir(), d.fsync) == nil
}

// compactJournal rewrites the snapshot, if there is one that covers the
// journal, when the journal runs compactAfter bytes past it: called by a
// writer whose journal line crossed a multiple of compactCheck, so that a
// reader's first call reads a bounded part of the journal even when no
// reader runs for a long time. A writer never lists the directory for a
// snapshot: without one, the next reader's first call lists it and
// writes one.
func (d *Dir) compactJournal() {
	d.namesMu.Lock()
	defer d.namesMu.Unlock()
	fi, err := os.Lstat(d.journalPath())
	if err != nil {
		return
	}
	c := d.loadSnapshot(fi)
	if c == nil || fi.Size()-c.off < compactAfter {
		return
	}
	c = c.follow(d.journalPath(), fi)
	d.writeSnapshot(c)
}

// snapshotOffset returns the journal offset the snapshot on disk covers,
// reading its first lines only; false if it holds none.
func (d *Dir) snapshotOffset() (int64, bool) {
	f, _, err := openGen(d.snapshotPath())
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var buf [len(snapshotHeader) + 64]byte
	n, _ := io.ReadFull(f, buf[:])
	body, ok := strings.CutPrefix(string(buf[:n]), snapshotHeader)
	if !ok {
		return 0, false
	}
	line, _, ok := strings.Cut(body, "\n")
	f2 := strings.Fields(line)
	if !ok || len(f2) != 4 || f2[0] != "journal" {
		return 0, false
	}
	off, err := strconv.ParseInt(f2[1], 10, 64)
	return off, err == nil
}

// encodeInfo returns the INFO of a session a listing showed (see
// snapshotName).
func encodeInfo(l *listed) string {
	b := []byte{'l'}
	for i, g := range l.gens {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, g, 10)
	}
	for _, q := range l.corrupt {
		b = append(b, '\t')
		b = append(b, q.name...)
	}
	return string(b)
}

// parseInfo returns what a listing showed of session, as its INFO tells
// it; nil if info is empty (not listed) or not an INFO of session.
func parseInfo(session, info string) *listed {
	rest, ok := strings.CutPrefix(info, "l")
	if !ok {
		return nil
	}
	gens, corrupt, _ := strings.Cut(rest, "\t")
	l := &listed{session: session}
	if gens != "" {
		for g := range strings.SplitSeq(gens, ",") {
			n, err := strconv.ParseUint(g, 10, 64)
			if err != nil || !validGeneration(n) || len(l.gens) > 0 && n <= l.gens[len(l.gens)-1] {
				return nil
			}
			l.gens = append(l.gens, n)
		}
	}
	if corrupt != "" {
		for name := range strings.SplitSeq(corrupt, "\t") {
			gen, kind := parseName(name, session)
			if kind != kindCorrupt {
				return nil
			}
			l.corrupt = append(l.corrupt, quarantined{gen, name})
		}
	}
	return l
}

// removeSnapshotTemps removes the snapshot's temporary files among names,
// a listing of the directory (left by a process killed while writing it;
// one being written now fails its rename, harmlessly).
func (d *Dir) removeSnapshotTemps(names []string) {
	for _, name := range names {
		if strings.HasPrefix(name, snapshotTemp) {
			os.Remove(filepath.Join(d.dir(), name))
		}
	}
}

// mergeNames returns names and info (parallel, sorted) with the sessions
// of ops added ('+', with an empty INFO unless present) or removed ('-').
func mergeNames(names, info []string, ops map[string]byte) ([]string, []string) {
	var adds []string
	drop := 0
	for s, op := range ops {
		_, found := slices.BinarySearch(names, s)
		switch {
		case op == '+' && !found:
			adds = append(adds, s)
		case op == '-' && found:
			drop++
		}
	}
	if len(adds) == 0 && drop == 0 {
		return names, info
	}
	slices.Sort(adds)
	outN := make([]string, 0, len(names)+len(adds)-drop)
	outI := make([]string, 0, len(names)+len(adds)-drop)
	j := 0
	for i, s := range names {
		for j < len(adds) && adds[j] < s {
			outN, outI = append(outN, adds[j]), append(outI, "")
			j++
		}
		if ops[s] == '-' {
			continue
		}
		outN, outI = append(outN, s), append(outI, info[i])
	}
	for ; j < len(adds); j++ {
		outN, outI = append(outN, adds[j]), append(outI, "")
	}
	return outN, outI
}

// journalOps returns the last operation of each session in buf, whole
// lines of the journal: torn lines and others are skipped.
func journalOps(buf string) map[string]byte {
	ops := make(map[string]byte)
	for line := range strings.Lines(buf) {
		rec, sum, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		if !ok || len(rec) < 2 || (rec[0] != '+' && rec[0] != '-') ||
			strconv.FormatUint(uint64(crc32.Checksum([]byte(rec), castagnoli)), 16) != sum {
			continue // torn by a crash, or not a record
		}
		if session := rec[1:]; ValidateSession(session) == nil {
			ops[session] = rec[0]
		}
	}
	return ops
}
