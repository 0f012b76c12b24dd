package checkpoint_test

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

const (
	snapshotFile = ".sessions.index"
	journalFile  = ".sessions.journal"
)

// checkFirstPage checks that a new Dir's first SessionsAfter, from each of
// a few names on, lists what Sessions (a listing) lists, listing the
// directory wantLists times for the first call (and never after).
func checkFirstPage(t *testing.T, dir, when string, wantLists int64) {
	t.Helper()
	d := checkpoint.NewDir(dir)
	for _, after := range []string{"", "b", "c", "m", "zz"} {
		got, lists := pageOf(t, d, after)
		var want []string
		for _, s := range listedSessions(t, dir) {
			if name, _, _ := strings.Cut(s, "@"); name > after {
				want = append(want, s)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: a new Dir's SessionsAfter(%q) = %v, Sessions lists %v", when, after, got, want)
		}
		if lists != wantLists {
			t.Errorf("%s: SessionsAfter(%q) listed the directory %d times, want %d", when, after, lists, wantLists)
		}
		wantLists = 0
	}
}

// TestDirSessionsSnapshot guards issue 31, item 11's goal for a directory:
// a new Dir's first page of SessionsAfter (a viewer process's first list
// page) reads the snapshot of the sessions journal, written by the first
// Dir that listed the directory, and the journal past it, without listing
// the directory, and lists what Sessions lists as other Dirs create,
// save and remove sessions; a snapshot missing, torn, damaged, or stale
// (its journal replaced or shortened) is not trusted: the directory is
// listed once, and the snapshot written anew. Mutations caught: the
// snapshot not written (a new Dir lists); not read (likewise); the body's
// CRC not checked (a damaged snapshot trusted: a session missing or
// renamed); the bytes before the offset not checked (a journal
// shortened below it and grown past it trusted: the sessions of the lines
// before the offset missing); neither they nor the journal's first bytes
// checked (likewise, and a replaced journal trusted); the journal past
// the snapshot not read. Not caught: the first bytes alone not checked (a
// replaced journal differs before the offset too; they are a second
// check, for a replaced journal whose lines fall alike).
func TestDirSessionsSnapshot(t *testing.T) {
	dir := t.TempDir()
	w := checkpoint.NewDir(dir, checkpoint.Keep(2))
	for _, s := range []string{"a", "c", "e", "o", "p", "q"} {
		saveGens(t, w, s, 1)
	}
	saveGens(t, w, "a", 2)
	checkFirstPage(t, dir, "no snapshot", 1)
	if _, err := os.Stat(filepath.Join(dir, snapshotFile)); err != nil {
		t.Fatalf("no snapshot after a listing: %v", err)
	}
	checkFirstPage(t, dir, "snapshot", 0)

	// The journal past the snapshot: created, saved, removed.
	saveGens(t, checkpoint.NewDir(dir), "b", 1)
	saveGens(t, w, "a", 0)
	saveGens(t, w, "n", 1)
	if err := checkpoint.NewDir(dir).Remove(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	checkFirstPage(t, dir, "the journal past the snapshot", 0)

	snap := filepath.Join(dir, snapshotFile)
	whole := readFile(t, snap)
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"missing", nil},
		{"empty", []byte{}},
		{"garbage", []byte("garbage\n")},
		{"a byte of the body changed", bytes.Replace(whole, []byte("\ne\t"), []byte("\nf\t"), 1)},
		{"a byte added", append(slices.Clone(whole), 'x')},
	} {
		if tc.data == nil {
			os.Remove(snap)
		} else {
			writeFile(t, snap, tc.data)
		}
		checkFirstPage(t, dir, "snapshot "+tc.name, 1)
		checkFirstPage(t, dir, "rewritten after "+tc.name, 0)
	}
	whole = readFile(t, snap)
	for i := range len(whole) {
		writeFile(t, snap, whole[:i])
		got, lists := pageOf(t, checkpoint.NewDir(dir), "")
		if want := listedSessions(t, dir); !slices.Equal(got, want) || lists != 1 {
			t.Fatalf("snapshot torn at %d: %v, listed %d times; want %v, once", i, got, lists, want)
		}
	}
	checkFirstPage(t, dir, "rewritten after a torn one", 0)

	// The journal shortened below the snapshot's offset (past its first
	// line), then grown past it: the lines appended since would be read
	// from the wrong place.
	journal := filepath.Join(dir, journalFile)
	off, ok := checkpoint.SnapshotOffset(checkpoint.NewDir(dir))
	if !ok || off < 100 {
		t.Fatalf("snapshot offset %d, %v: want one past 100", off, ok)
	}
	if err := os.Truncate(journal, off-30); err != nil {
		t.Fatal(err)
	}
	growPast(t, w, journal, "g", off)
	checkFirstPage(t, dir, "journal shortened then grown", 1)

	// The journal replaced (deleted, then written anew by new sessions,
	// past the snapshot's offset): its first line differs.
	if off, ok = checkpoint.SnapshotOffset(checkpoint.NewDir(dir)); !ok {
		t.Fatal("no snapshot")
	}
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	growPast(t, w, journal, "r", off)
	checkFirstPage(t, dir, "journal replaced", 1)
	checkFirstPage(t, dir, "after the journal was replaced", 0)
}

// TestDirSessionsSnapshotHostile: a snapshot written by hand, its CRC
// holding, whose names are unsorted, repeated, or not session names (a
// path out of the directory), lists no invalid name, no name twice, and no file outside the
// directory. Mutation caught: a row's name not validated (the file outside read).
func TestDirSessionsSnapshotHostile(t *testing.T) {
	dir := t.TempDir()
	saveGens(t, checkpoint.NewDir(dir), "a", 1)
	saveGens(t, checkpoint.NewDir(dir), "b", 1)
	pageOf(t, checkpoint.NewDir(dir), "") // writes the snapshot
	outside := filepath.Join(filepath.Dir(dir), "x.00000000000000000001.ckpt")
	data, err := checkpoint.Marshal(checkpointtest.Checkpoint("x", 1))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, outside, data) // read, the row would fail: it records "x"
	defer os.Remove(outside)
	snap := filepath.Join(dir, snapshotFile)
	old := string(readFile(t, snap))
	head, _, _ := strings.Cut(old, "\nbody ")
	body := "b\nb\nz/../../x\tl1\na\n\n" // z/../../x.….ckpt is outside
	sum := crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))
	writeFile(t, snap, fmt.Appendf(nil, "%s\nbody %d %x\n%s", head, len(body), sum, body))
	got, lists := pageOf(t, checkpoint.NewDir(dir), "")
	if lists != 0 {
		t.Errorf("listed %d times: the hand-written snapshot not used", lists)
	}
	for i, s := range got {
		if strings.Contains(s, "..") || i > 0 && got[i-1] >= s {
			t.Errorf("SessionsAfter = %v: an invalid or repeated name", got)
		}
	}
}

// TestDirSessionsSnapshotCompaction guards the bound on what a new Dir
// reads of the journal: a writer whose line takes the journal past the
// snapshot by the compaction bound rewrites the snapshot (so a reader's
// first page reads at most that much of the journal, whether or not any
// reader ran meanwhile), and so does a reader that read that much; the
// snapshot covers what it was made of, no more. Mutations caught: a
// writer that never compacts (the snapshot stays at its first offset); a
// reader that never does; a snapshot claiming the journal's length at its
// writing rather than what was read (a session created meanwhile
// missing).
func TestDirSessionsSnapshotCompaction(t *testing.T) {
	const after, check = 400, 100
	dir := t.TempDir()
	w := checkpoint.NewDir(dir)
	checkpoint.SetCompaction(w, after, check)
	saveGens(t, w, "a", 1)
	pageOf(t, checkpoint.NewDir(dir), "") // the first snapshot
	journal := filepath.Join(dir, journalFile)
	for i := range 60 {
		saveGens(t, w, fmt.Sprintf("w%02d", i), 1)
		fi, err := os.Stat(journal)
		if err != nil {
			t.Fatal(err)
		}
		off, ok := checkpoint.SnapshotOffset(w)
		if !ok || fi.Size()-off >= after+check+64 {
			t.Fatalf("after %d sessions: the journal is %d bytes, the snapshot covers %d (%v): want at most %d past it",
				i+1, fi.Size(), off, ok, after+check+64)
		}
	}
	checkFirstPage(t, dir, "compacted by a writer", 0)

	// A reader that reads the compaction bound's worth rewrites it.
	r := checkpoint.NewDir(dir)
	checkpoint.SetCompaction(r, after, check)
	pageOf(t, r, "")
	before, _ := checkpoint.SnapshotOffset(r)
	w2 := checkpoint.NewDir(dir) // never compacts
	checkpoint.SetCompaction(w2, 1<<40, 1<<40)
	for i := range 30 {
		saveGens(t, w2, fmt.Sprintf("x%02d", i), 1)
	}
	// A session created while the reader writes its snapshot: not
	// covered by it.
	checkpoint.SetSaveHook(r, func(stage string) error {
		if stage == "snapshot" {
			checkpoint.SetSaveHook(r, nil)
			saveGens(t, w2, "y", 1)
		}
		return nil
	})
	pageOf(t, r, "")
	checkpoint.SetSaveHook(r, nil)
	if now, _ := checkpoint.SnapshotOffset(r); now == before {
		t.Errorf("a reader that read %d bytes of the journal past the snapshot did not rewrite it", after)
	}
	checkFirstPage(t, dir, "compacted by a reader", 0)
}

// TestDirSessionsSnapshotSynced guards the snapshot under power loss,
// which a kill does not show: what the snapshot covers of the journal is
// on disk before the snapshot is (the journal synced before the
// snapshot's rename), and a new session's journal line before its marker
// (synced before the marker's directory sync), so that no crash leaves a
// snapshot that covers lines lost, nor a marker whose line is lost past
// the snapshot (a reader trusting the snapshot would miss its session).
// Mutations caught: the journal not synced before the snapshot; a '+'
// line not synced.
func TestDirSessionsSnapshotSynced(t *testing.T) {
	dir := t.TempDir()
	saveGens(t, checkpoint.NewDir(dir), "a", 1)
	var synced []string // the files synced, in order
	record := func(f *os.File) error {
		synced = append(synced, filepath.Base(f.Name()))
		return f.Sync()
	}
	r := checkpoint.NewDir(dir)
	checkpoint.SetSync(r, record)
	checkpoint.SetSaveHook(r, func(stage string) error {
		if stage == "snapshot rename" && !slices.Contains(synced, journalFile) {
			t.Error("the snapshot is renamed into place before the journal it covers is synced")
		}
		return nil
	})
	pageOf(t, r, "")
	if _, err := os.Stat(filepath.Join(dir, snapshotFile)); err != nil {
		t.Fatal(err)
	}

	w := checkpoint.NewDir(dir)
	synced = nil
	checkpoint.SetSync(w, func(f *os.File) error {
		if fi, err := f.Stat(); err == nil && fi.IsDir() && !slices.Contains(synced, journalFile) {
			t.Errorf("a new session's marker synced (directory) before its journal line: synced %v", synced)
		}
		return record(f)
	})
	saveGens(t, w, "n", 1)
}

// growPast creates sessions prefix00, prefix01, ... with d until the
// journal is 20 bytes past off.
func growPast(t *testing.T, d *checkpoint.Dir, journal, prefix string, off int64) {
	t.Helper()
	for i := 0; ; i++ {
		saveGens(t, d, fmt.Sprintf("%s%02d", prefix, i), 1)
		if fi, err := os.Stat(journal); err != nil || fi.Size() > off+20 {
			return
		}
	}
}

// TestDirSessionsSnapshotOldLayout guards a directory written before the
// journal (issue 31, item 11): its first reader lists it and writes the
// journal's first line and the snapshot, with what the listing showed of
// each session (its generation and quarantined files), so that a later
// Dir's first page lists nothing, even for the sessions without a marker
// or with an empty one, and lists what Sessions lists; a session such a
// version writes after the snapshot is not listed by SessionsAfter (as by
// a long-lived Dir after its first call) until a Dir locks it, which
// journals it. Mutations caught: the listing's generations not kept in
// the snapshot (a session without a marker missing, one with an empty
// marker listing the directory); Lock not journaling an earlier
// version's session (never listed).
func TestDirSessionsSnapshotOldLayout(t *testing.T) {
	dir := t.TempDir()
	write := func(s string, marker bool, gens ...uint64) {
		for _, gen := range gens {
			data, err := checkpoint.Marshal(checkpointtest.Checkpoint(s, gen))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, genFile(s, gen)), data)
		}
		if marker {
			writeFile(t, filepath.Join(dir, s+".session"), nil)
		}
	}
	write("a", false, 2, 3)
	write("b", true, 1)
	write("c", false, 4)
	writeFile(t, filepath.Join(dir, genFile("c", 5)+".corrupt"), []byte("damaged"))
	checkFirstPage(t, dir, "an earlier version's directory", 1)
	if _, err := os.Stat(filepath.Join(dir, journalFile)); err != nil {
		t.Errorf("no journal after the first listing: %v", err)
	}
	checkFirstPage(t, dir, "its snapshot", 0)

	write("legacy", false, 7)
	_, release, err := checkpoint.NewDir(dir).Lock(ctx, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	release()
	checkFirstPage(t, dir, "after locking a session an earlier version wrote", 0)
}

// TestDirSessionsSnapshotConcurrent: Dirs creating and removing sessions
// while others read the list (new Dirs, and two goroutines paging through
// one long-lived Dir), each compacting the journal often, leave a
// snapshot and journal from which a new Dir lists what Sessions lists;
// run with -race. Mutation caught: the journal's removals applied to the
// cache in place rather than to a copy (a data race, or a concurrent map
// write, between the goroutines sharing a Dir).
func TestDirSessionsSnapshotConcurrent(t *testing.T) {
	dir := t.TempDir()
	saveGens(t, checkpoint.NewDir(dir), "seed", 1)
	done := make(chan struct{})
	errs := make(chan error, 16)
	for w := range 3 {
		go func() {
			d := checkpoint.NewDir(dir)
			checkpoint.SetCompaction(d, 200, 50)
			var err error
			for i := range 40 {
				s := fmt.Sprintf("w%d-%02d", w, i)
				if err = d.Save(ctx, checkpointtest.Checkpoint(s, 1)); err != nil {
					break
				}
				if i%3 == 2 {
					if err = d.Remove(ctx, fmt.Sprintf("w%d-%02d", w, i-1)); err != nil {
						break
					}
				}
			}
			errs <- err
		}()
	}
	shared := checkpoint.NewDir(dir)
	checkpoint.SetCompaction(shared, 200, 50)
	const readers = 3
	for r := range readers {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				d := shared
				if r == 0 {
					d = checkpoint.NewDir(dir)
					checkpoint.SetCompaction(d, 200, 50)
				}
				for _, err := range d.SessionsAfter(ctx, "") {
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range readers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got, _ := pageOf(t, checkpoint.NewDir(dir), "")
	if want := listedSessions(t, dir); !slices.Equal(got, want) {
		t.Errorf("a new Dir's SessionsAfter = %v, Sessions lists %v", got, want)
	}
}

// TestDirSnapshotTempNames: a listing removes a killed snapshot write's
// temporary file (".sessions.index.tmp" and digits), never a session's
// temporary file, whatever the session's name: that of a save in
// progress of the session "sessions.index.tmp5" starts alike. Mutation
// caught: any name with the prefix taken for a snapshot's (the save's
// temporary file removed).
func TestDirSnapshotTempNames(t *testing.T) {
	dir := t.TempDir()
	saveGens(t, checkpoint.NewDir(dir), "a", 1)
	stale := filepath.Join(dir, snapshotFile+".tmp123456")
	saving := filepath.Join(dir, "."+snapshotFile[1:]+".tmp5.987654.tmp")
	writeFile(t, stale, []byte("killed"))
	writeFile(t, saving, []byte("in progress"))
	pageOf(t, checkpoint.NewDir(dir), "") // lists: no snapshot
	if _, err := os.Stat(stale); err == nil {
		t.Error("a listing left a killed snapshot write's temporary file")
	}
	if _, err := os.Stat(saving); err != nil {
		t.Errorf("a listing removed the temporary file of a save of session %q: %v", "sessions.index.tmp5", err)
	}
}
