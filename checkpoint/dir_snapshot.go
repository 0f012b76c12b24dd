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
	"strconv"
	"strings"
)

// snapshotName is the snapshot of the sessions journal (see Dir, Files):
// snapshotHeader; a line "journal OFF N HEAD M TAIL" (the journal it
// covers: up to offset OFF, the file whose first N bytes have the CRC-32C
// HEAD, and the M bytes before OFF the CRC-32C TAIL: one shortened and
// grown again differs there); a
// line "body LEN CRC", the length and CRC-32C of what follows it; and the
// body: a line "NAME" or "NAME\tINFO" for each session, sorted by name.
// INFO, for a session a listing of the directory showed, is "l" and its
// generations (comma-separated, ascending), then a tab and the name of
// each quarantined file. Numbers are decimal, CRCs hexadecimal. Its name
// is none of a session's files.
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

// compactLimits returns compactAfter and compactCheck, or what a test set.
func (d *Dir) compactLimits() (after, check int64) {
	after, check = compactAfter, compactCheck
	if d.compactAt > 0 {
		after, check = d.compactAt, d.compactEvery
	}
	return after, check
}

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
// off, the journal's first bytes and those before off being head and tail.
func encodeSnapshot(c *nameCache, off int64, head, tail []byte) []byte {
	body := c.materialize()
	b := make([]byte, 0, len(snapshotHeader)+128+len(body))
	b = append(b, snapshotHeader...)
	b = append(b, "journal "...)
	b = strconv.AppendInt(b, off, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(head)), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(crc32.Checksum(head, castagnoli)), 16)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(tail)), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(crc32.Checksum(tail, castagnoli)), 16)
	b = append(b, "\nbody "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(crc32.Checksum([]byte(body), castagnoli)), 16)
	b = append(b, '\n')
	return append(b, body...)
}

// errNoSnapshot is parseSnapshot's error for a file that holds no snapshot.
var errNoSnapshot = errors.New("no snapshot")

// snapshotHead is the first lines of a snapshot, as read.
type snapshotHead struct {
	off     int64  // the journal's offset it covers
	headLen int    // how many of the journal's first bytes identify it
	head    uint32 // their CRC
	tailLen int    // how many bytes before off are checked
	tail    uint32 // their CRC
	bodyAt  int64  // where the body starts
	bodyLen int64
	bodySum uint32
}

// parseSnapshotHead reads the first lines of a snapshot from buf, its
// first bytes; errNoSnapshot if they are not a snapshot's.
func parseSnapshotHead(buf []byte) (*snapshotHead, error) {
	rest, ok := strings.CutPrefix(string(buf), snapshotHeader)
	if !ok {
		return nil, errNoSnapshot
	}
	line1, rest, ok1 := strings.Cut(rest, "\n")
	line2, _, ok2 := strings.Cut(rest, "\n")
	f1, f2 := strings.Fields(line1), strings.Fields(line2)
	if !ok1 || !ok2 || len(f1) != 6 || f1[0] != "journal" || len(f2) != 3 || f2[0] != "body" {
		return nil, errNoSnapshot
	}
	h := &snapshotHead{bodyAt: int64(len(snapshotHeader) + len(line1) + len(line2) + 2)}
	off, err1 := strconv.ParseInt(f1[1], 10, 64)
	headLen, err2 := strconv.Atoi(f1[2])
	head, err3 := strconv.ParseUint(f1[3], 16, 32)
	tailLen, err4 := strconv.Atoi(f1[4])
	tail, err5 := strconv.ParseUint(f1[5], 16, 32)
	bodyLen, err6 := strconv.ParseInt(f2[1], 10, 64)
	bodySum, err7 := strconv.ParseUint(f2[2], 16, 32)
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7); err != nil || off < 0 ||
		headLen < 0 || headLen > journalHead || tailLen < 0 || tailLen > journalHead || int64(tailLen) > off ||
		bodyLen < 0 || bodyLen > maxSnapshot {
		return nil, errNoSnapshot
	}
	h.off, h.headLen, h.head, h.tailLen, h.tail = off, headLen, uint32(head), tailLen, uint32(tail)
	h.bodyLen, h.bodySum = bodyLen, uint32(bodySum)
	return h, nil
}

// readSnapshotHead opens the snapshot and reads its first lines.
func (d *Dir) readSnapshotHead() (*os.File, *snapshotHead, error) {
	f, size, err := openGen(d.snapshotPath())
	if err != nil {
		return nil, nil, err
	}
	buf := make([]byte, min(size, 256))
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, nil, err
	}
	h, err := parseSnapshotHead(buf[:n])
	if err == nil && h.bodyAt+h.bodyLen != size {
		err = errNoSnapshot // torn, or grown
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, h, nil
}

// loadSnapshot returns the cache the snapshot on disk gives, if it covers
// the journal fi (the same file, by its first bytes, at least as long as
// the offset it covers) and its body is whole (its CRC holding); nil if
// there is none, or it is damaged or stale (the journal replaced or
// shortened since). The body is read into one string, not parsed: a page
// looks its first name up by bisection (see nameCache).
func (d *Dir) loadSnapshot(fi os.FileInfo) *nameCache {
	if fi == nil {
		return nil
	}
	f, h, err := d.readSnapshotHead()
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi.Size() < h.off {
		return nil
	}
	head, tail, err := readEnds(d.journalPath(), fi, h.headLen, h.off, h.tailLen)
	if err != nil || crc32.Checksum(head, castagnoli) != h.head || crc32.Checksum(tail, castagnoli) != h.tail {
		return nil
	}
	var body strings.Builder
	body.Grow(int(h.bodyLen))
	sum := crc32.New(castagnoli)
	if n, err := io.Copy(io.MultiWriter(&body, sum), io.NewSectionReader(f, h.bodyAt, h.bodyLen)); err != nil || n != h.bodyLen {
		return nil
	}
	base := body.String()
	if sum.Sum32() != h.bodySum || base != "" && base[len(base)-1] != '\n' {
		return nil
	}
	return &nameCache{base: base, journal: fi, off: h.off, snapOff: h.off}
}

// readEnds returns the first n bytes of the journal at path, which must be
// the file fi, and the m bytes before off.
func readEnds(path string, fi os.FileInfo, n int, off int64, m int) (head, tail []byte, err error) {
	f, _, err := openGen(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !os.SameFile(now, fi) {
		return nil, nil, errNoSnapshot
	}
	return journalEnds(f, n, off, m)
}

// journalEnds reads the first n bytes of the journal f and the m bytes
// before off.
func journalEnds(f *os.File, n int, off int64, m int) (head, tail []byte, err error) {
	head = make([]byte, n)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, nil, err
	}
	tail = make([]byte, m)
	if _, err := f.ReadAt(tail, off-int64(m)); err != nil {
		return nil, nil, err
	}
	return head, tail, nil
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
	if c.empty() && c.journal == nil {
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
	head, tail, err := journalEnds(j, int(min(size, journalHead)), c.off, int(min(c.off, journalHead)))
	if err != nil {
		return false
	}
	data := encodeSnapshot(c, c.off, head, tail)
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
	if after, _ := d.compactLimits(); c == nil || fi.Size()-c.off < after {
		return
	}
	c = c.follow(d.journalPath(), fi)
	d.writeSnapshot(c)
}

// snapshotOffset returns the journal offset the snapshot on disk covers,
// reading its first lines only; false if it holds none.
func (d *Dir) snapshotOffset() (int64, bool) {
	f, h, err := d.readSnapshotHead()
	if err != nil {
		return 0, false
	}
	f.Close()
	return h.off, true
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
		if isSnapshotTemp(name) {
			os.Remove(filepath.Join(d.dir(), name))
		}
	}
}

// isSnapshotTemp reports whether name is that of a snapshot's temporary
// file: snapshotTemp and digits (a session's temporary file, which ends in
// ".tmp", is not, whatever its session's name).
func isSnapshotTemp(name string) bool {
	rest, ok := strings.CutPrefix(name, snapshotTemp)
	return ok && rest != "" && allDigits(rest)
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
