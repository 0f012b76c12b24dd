package checkpoint_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// gensOf returns the generation numbers Generations lists of session in
// d, and how many times d listed the directory for them.
func gensOf(t *testing.T, d *checkpoint.Dir, session string) ([]uint64, int64) {
	t.Helper()
	var lists atomic.Int64
	checkpoint.SetOnList(d, func() { lists.Add(1) })
	defer checkpoint.SetOnList(d, nil)
	gens, err := d.Generations(ctx, session)
	if err != nil {
		t.Fatalf("Generations(%s): %v", session, err)
	}
	var out []uint64
	for _, g := range gens {
		out = append(out, g.Generation)
	}
	return out, lists.Load()
}

// truthOf returns the generations of session a listing of dir shows: a
// Dir that reads no index.
func truthOf(t *testing.T, dir, session string) []uint64 {
	t.Helper()
	d := checkpoint.NewDir(dir)
	checkpoint.SetNoIndex(d)
	gens, _ := gensOf(t, d, session)
	return gens
}

// checkIndexed checks that a new Dir's Generations of session lists what a
// listing shows, without listing the directory.
func checkIndexed(t *testing.T, dir, session, when string) {
	t.Helper()
	got, lists := gensOf(t, checkpoint.NewDir(dir), session)
	if want := truthOf(t, dir, session); !slices.Equal(got, want) {
		t.Errorf("%s: Generations from the index = %v, the directory holds %v", when, got, want)
	}
	if lists != 0 {
		t.Errorf("%s: Generations listed the directory %d times, want 0 (the index)", when, lists)
	}
}

// TestDirGenerationsIndexed guards issue 31, item 10 for a directory:
// reading one session's generations (a viewer's session page) never lists
// the directory, and lists exactly the generations on disk, after every
// operation that adds, prunes, quarantines or fails to add one, under each
// retention. Mutations caught: Generations listing the directory (the
// index ignored); a save's index not rewritten (pruned or quarantined
// generations listed, the newer ones found only by name up to the probe's
// bound); the index written after the rename rather than before (a failed
// save's "indexed" stage: no mutation shows there, the look-up by name
// covers it; see TestDirIndexJumpSynced for the jump); under MaxBytes, the
// index left as it was when the new generation's size makes the prune
// delete one above its newest (generations missed from save 3 on).
func TestDirGenerationsIndexed(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []checkpoint.DirOption
	}{
		{"keep2", []checkpoint.DirOption{checkpoint.Keep(2)}},
		{"keepall", []checkpoint.DirOption{checkpoint.KeepAll()}},
		{"keepbest", []checkpoint.DirOption{checkpoint.Keep(2), checkpoint.KeepBest()}},
		{"maxbytes", []checkpoint.DirOption{checkpoint.Keep(6), checkpoint.MaxBytes(int64(len(encoded(t)) * 3))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir, tc.opts...)
			const s = "s"
			save := func(gen, best uint64) error {
				c := checkpointtest.Checkpoint(s, gen)
				c.BestGeneration = best
				return d.Save(ctx, c)
			}
			for gen := uint64(1); gen <= 4; gen++ {
				if err := save(gen, 2); err != nil {
					t.Fatal(err)
				}
				checkIndexed(t, dir, s, fmt.Sprintf("save %d", gen))
			}
			if err := save(20, 2); err != nil { // a jump
				t.Fatal(err)
			}
			checkIndexed(t, dir, s, "jump to 20")
			for _, stage := range []string{"write", "sync", "publish", "index", "indexed"} {
				reached := false
				checkpoint.SetSaveHook(d, func(st string) error {
					if st == stage {
						reached = true
						return errors.New("injected")
					}
					return nil
				})
				ask := uint64(0)
				if stage == "index" {
					ask = 100 // a jump: its index is written, synced
				}
				err := save(ask, 2)
				checkpoint.SetSaveHook(d, nil)
				if stage == "index" && !reached {
					t.Fatal("a jump wrote no index")
				}
				switch {
				case !reached:
					// This save left the index as it was (its generation
					// is found by name).
					if err != nil {
						t.Fatalf("save not reaching %s: %v", stage, err)
					}
					checkIndexed(t, dir, s, "save not reaching "+stage)
				case stage == "index":
					// An index that cannot be written is emptied, and
					// the save goes on: readers list the directory.
					if err != nil {
						t.Fatalf("save whose index failed: %v", err)
					}
					if n := len(readFile(t, filepath.Join(dir, s+".session"))); n != 0 {
						t.Errorf("the marker of a save whose index failed holds %d bytes, want it emptied", n)
					}
					if got, want := mustGens(t, dir, s), truthOf(t, dir, s); !slices.Equal(got, want) {
						t.Errorf("index emptied: Generations = %v, want %v", got, want)
					}
				default:
					if err == nil {
						t.Fatalf("save failing at %s: no error", stage)
					}
					checkIndexed(t, dir, s, "save failed at "+stage)
				}
				if err := save(0, 2); err != nil {
					t.Fatal(err)
				}
				checkIndexed(t, dir, s, "save after one failed at "+stage)
			}
			// The newest damaged: Load quarantines it.
			gens := truthOf(t, dir, s)
			newest := filepath.Join(dir, genFile(s, gens[len(gens)-1]))
			writeFile(t, newest, []byte("damaged"))
			if _, err := checkpoint.NewDir(dir, tc.opts...).Load(ctx, s); err != nil {
				t.Fatal(err)
			}
			checkIndexed(t, dir, s, "quarantine")
			if err := save(0, 2); err != nil {
				t.Fatal(err)
			}
			checkIndexed(t, dir, s, "save after quarantine")
			// A lock prunes, a fenced save with a stale token is refused.
			l := checkpoint.NewDir(dir, checkpoint.Keep(1))
			token, release, err := l.Lock(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			checkIndexed(t, dir, s, "lock")
			c := checkpointtest.Checkpoint(s, 0)
			c.Token = token + 1
			if err := l.Save(ctx, c); !errors.Is(err, checkpoint.ErrFenced) {
				t.Fatalf("stale token: %v, want ErrFenced", err)
			}
			c.Token = token
			if err := l.Save(ctx, c); err != nil {
				t.Fatal(err)
			}
			checkIndexed(t, dir, s, "fenced save")
			release()
			if err := d.Remove(ctx, s); err != nil {
				t.Fatal(err)
			}
			if got, _ := gensOf(t, checkpoint.NewDir(dir), s); len(got) != 0 {
				t.Errorf("after Remove: %v", got)
			}
			if err := save(0, 0); err != nil {
				t.Fatal(err)
			}
			checkIndexed(t, dir, s, "save after Remove")
		})
	}
}

// writeMarker replaces the marker of session in dir.
func writeMarker(t *testing.T, dir, session string, data []byte) {
	t.Helper()
	writeFile(t, filepath.Join(dir, session+".session"), data)
}

// TestDirIndexCrashStates guards what a crash can leave of an index (issue
// 31, item 10): an index that misses the newest generations (its rename
// lost, the generations' kept), one that names generations not on disk (a
// save killed between its index and its rename), and a torn, emptied or
// foreign one. Generations lists what the directory holds in each.
// Mutations caught: no look-up by name above the index's newest (stale:
// generations missed); the CRC not checked (an index with a digit
// changed trusted: generation 8 listed, 9 missed); a marker that holds no index
// trusted as an empty one.
func TestDirIndexCrashStates(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir, checkpoint.KeepAll())
	saveGens(t, d, "s", 1, 2, 3)
	stale := readFile(t, filepath.Join(dir, "s.session"))
	saveGens(t, d, "s", 4, 5)
	writeMarker(t, dir, "s", stale) // the index of 1–3: 4 and 5 by name
	checkIndexed(t, dir, "s", "stale index")

	checkpoint.SetSaveHook(d, func(st string) error {
		if st == "indexed" {
			return errors.New("killed")
		}
		return nil
	})
	if err := d.Save(ctx, checkpointtest.Checkpoint("s", 6)); err == nil {
		t.Fatal("no error")
	}
	checkpoint.SetSaveHook(d, nil)
	checkIndexed(t, dir, "s", "index names 6, not on disk")

	saveGens(t, d, "s", 9) // 7 and 8 never written
	whole := readFile(t, filepath.Join(dir, "s.session"))
	flipped := []byte(strings.Replace(string(whole), "g 9 9", "g 8 8", 1)) // its CRC no longer holds
	for _, bad := range [][]byte{nil, []byte("garbage"), whole[:len(whole)-1], append(slices.Clone(whole), 'x'), flipped} {
		writeMarker(t, dir, "s", bad)
		got, lists := gensOf(t, checkpoint.NewDir(dir), "s")
		if want := truthOf(t, dir, "s"); !slices.Equal(got, want) {
			t.Errorf("marker %q: Generations = %v, want %v", bad, got, want)
		}
		if lists != 1 {
			t.Errorf("marker %q: listed %d times, want once (no index to trust)", bad, lists)
		}
	}
	for i := range len(whole) - 1 {
		writeMarker(t, dir, "s", whole[:i])
		if got, want := mustGens(t, dir, "s"), truthOf(t, dir, "s"); !slices.Equal(got, want) {
			t.Errorf("index torn at %d: Generations = %v, want %v", i, got, want)
		}
	}
	// Another session's index in this one's marker holds no index.
	saveGens(t, d, "o", 1)
	o := readFile(t, filepath.Join(dir, "o.session"))
	writeMarker(t, dir, "s", o)
	if got, want := mustGens(t, dir, "s"), truthOf(t, dir, "s"); !slices.Equal(got, want) {
		t.Errorf("another session's index: Generations = %v, want %v", got, want)
	}
}

func mustGens(t *testing.T, dir, session string) []uint64 {
	t.Helper()
	got, _ := gensOf(t, checkpoint.NewDir(dir), session)
	return got
}

// TestDirIndexJumpSynced guards the one save a reader could not find by
// name: one whose generation is not the next (max(c.Generation,
// newest+1) above newest+1). Its index, naming it, is synced, file and
// directory, before its rename, so no crash leaves it on disk with an
// index that misses it; a save of the next generation adds no fsync.
// Mutations caught: the index never synced (the directory's first sync
// in the jump's save comes after the rename); always synced (2 more
// fsyncs on every save).
func TestDirIndexJumpSynced(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1)
	var syncs int
	jump := filepath.Join(dir, genFile("s", 10))
	var sawIndexFirst, checked bool
	checkpoint.SetSync(d, func(f *os.File) error {
		syncs++
		if fi, err := f.Stat(); err == nil && fi.IsDir() && !checked {
			checked = true
			_, err := os.Lstat(jump)
			sawIndexFirst = errors.Is(err, os.ErrNotExist) && slices.Contains(indexOnDisk(t, dir, "s"), 10)
		}
		return f.Sync()
	})
	saveGens(t, d, "s", 2)
	next := syncs
	syncs, checked = 0, false
	saveGens(t, d, "s", 10)
	if !sawIndexFirst {
		t.Errorf("the jump's first directory sync did not find its index naming 10 with 10 not yet published")
	}
	if syncs != next+2 {
		t.Errorf("the jump's save made %d fsyncs, the next generation's %d: want 2 more (its index and the directory)", syncs, next)
	}
	if next != 2 {
		t.Errorf("a save of the next generation made %d fsyncs, want 2 (its file and the directory)", next)
	}
	checkIndexed(t, dir, "s", "jump")
}

// indexOnDisk returns the generations the index of session names, read by
// a Dir that probes nothing (an index lacking them finds them not).
func indexOnDisk(t *testing.T, dir, session string) []uint64 {
	t.Helper()
	gens, _, err := checkpoint.ReadIndex(checkpoint.NewDir(dir), session)
	if err != nil {
		return nil
	}
	return gens
}

// TestDirOldLayout guards directories written before indexes (issue 31,
// item 10): sessions without a marker (before item 11) and with an empty
// one (item 11) load, list their generations, resume (their lock writes
// their index, after which reading them lists nothing), save on from
// their newest, prune and fork. Mutations caught: Lock not writing the
// index of a session it listed (Generations lists the directory after
// it); an empty marker taken for an empty index (Generations lists none).
func TestDirOldLayout(t *testing.T) {
	dir := t.TempDir()
	// The old layout, by hand: generation files of two sessions, one with
	// an empty marker, and a quarantined file.
	for _, s := range []string{"old", "item11"} {
		for gen := uint64(2); gen <= 4; gen++ { // 1 pruned
			data, err := checkpoint.Marshal(checkpointtest.Checkpoint(s, gen))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, genFile(s, gen)), data)
		}
	}
	writeFile(t, filepath.Join(dir, genFile("old", 5)+".corrupt"), []byte("damaged"))
	writeFile(t, filepath.Join(dir, "item11.session"), nil)

	for _, s := range []string{"old", "item11"} {
		t.Run(s, func(t *testing.T) {
			if got, want := mustGens(t, dir, s), []uint64{2, 3, 4}; !slices.Equal(got, want) {
				t.Fatalf("Generations = %v, want %v", got, want)
			}
			d := checkpoint.NewDir(dir, checkpoint.Keep(2))
			token, release, err := d.Lock(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			checkIndexed(t, dir, s, "after the lock")
			c := load(t, d, s)
			wantSkipped := 0
			if s == "old" {
				wantSkipped = 1
			}
			if c.Generation != 4 || len(c.Skipped) != wantSkipped {
				t.Fatalf("Load: generation %d, skipped %v", c.Generation, c.Skipped)
			}
			next := checkpointtest.Checkpoint(s, c.Generation+1)
			next.Token = token
			if err := d.Save(ctx, next); err != nil {
				t.Fatal(err)
			}
			want := []uint64{4, 5}
			if s == "old" {
				want = []uint64{4, 6} // 5 is quarantined: never reused
			}
			if got := mustGens(t, dir, s); !slices.Equal(got, want) {
				t.Errorf("after a save: %v, want %v (Keep 2)", got, want)
			}
			checkIndexed(t, dir, s, "after a save")
			// A fork: an old generation into a new session.
			old, err := d.LoadGeneration(ctx, s, 4)
			if err != nil {
				t.Fatal(err)
			}
			fork := old.Clone()
			fork.Session, fork.Generation, fork.Token = s+"-fork", 0, 0
			fork.Origin = checkpoint.Origin{Session: s, Generation: 4}
			if err := d.Save(ctx, fork); err != nil {
				t.Fatal(err)
			}
			if got := load(t, checkpoint.NewDir(dir), s+"-fork"); got.Origin.Session != s {
				t.Errorf("fork: origin %v", got.Origin)
			}
			checkIndexed(t, dir, s+"-fork", "fork")
		})
	}
}

// TestDirIndexAfterRemove: a session removed and saved again by the same
// Dir, which numbers on from the generations it saw, gets an index that
// names its new generation: the new marker's empty index is no chain to
// follow to it. Mutation caught: the new marker taken for an index a
// reader follows from (Generations lists nothing after the save).
func TestDirIndexAfterRemove(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir, checkpoint.Keep(2))
	saveGens(t, d, "s", 1, 2, 3)
	if err := d.Remove(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	saveGens(t, d, "s", 0)
	checkIndexed(t, dir, "s", "a save after Remove")
}

// encoded returns the encoding of a generation of checkpointtest's.
func encoded(t *testing.T) []byte {
	t.Helper()
	data, err := checkpoint.Marshal(checkpointtest.Checkpoint("s", 1))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
