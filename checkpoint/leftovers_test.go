package checkpoint_test

// Issue 28, item 8: generations a save killed before its prune left.

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// writeLeftovers saves generations gens of session s to dir with a Dir
// that prunes nothing: the files a session leaves when each of its saves
// is killed between its rename and its prune. best, if not 0, is the best
// generation the newest names.
func writeLeftovers(t *testing.T, dir string, best uint64, gens ...uint64) {
	t.Helper()
	d := checkpoint.NewDir(dir, checkpoint.KeepAll())
	for i, g := range gens {
		c := checkpointtest.Checkpoint("s", g)
		if i == len(gens)-1 {
			c.BestGeneration = best
		}
		if err := d.Save(ctx, c); err != nil {
			t.Fatalf("Save generation %d: %v", g, err)
		}
	}
}

// lockAndRelease takes the lock of session s in d and gives it back.
func lockAndRelease(t *testing.T, d *checkpoint.Dir) {
	t.Helper()
	_, release, err := d.Lock(ctx, "s")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// TestDirLockPrunesLeftovers guards the rule "taking a session's lock
// prunes it as a save would have: a save killed between its rename and its
// prune leaves no generation beyond the retention (Keep, MaxBytes,
// KeepBest) once the session is locked again; the newest generation a Load
// would return, everything newer (damaged ones that Load quarantines) and
// the best are never pruned, and nothing is pruned while the newest
// generation cannot be read" (issue 28, item 8). Before, only temporary
// files were removed at Lock, and a finished session kept its leftovers
// for good.
//
// Mutations caught: the prune at Lock removed (keep_1, max_bytes,
// keep_best fail); pruning relative to the newest file without reading it
// whole (damaged_newest fails: generation 3, Load's fallback, is deleted);
// not protecting the best (keep_best); pruning when the newest cannot be
// read (unreadable_newest).
func TestDirLockPrunesLeftovers(t *testing.T) {
	size := int64(len(mustMarshal(t, checkpointtest.Checkpoint("s", 3))))
	for _, tc := range []struct {
		name   string
		opts   []checkpoint.DirOption
		best   uint64
		damage func(t *testing.T, dir string) // after the leftovers are written
		want   []string                       // the files after Lock
		load   uint64                         // the generation Load then returns, 0 for an error
	}{
		{name: "keep_1", opts: []checkpoint.DirOption{checkpoint.Keep(1)},
			want: []string{genFile("s", 4)}, load: 4},
		{name: "keep_default", opts: nil,
			want: []string{genFile("s", 2), genFile("s", 3), genFile("s", 4)}, load: 4},
		{name: "max_bytes", opts: []checkpoint.DirOption{checkpoint.KeepAll(), checkpoint.MaxBytes(2 * size)},
			want: []string{genFile("s", 3), genFile("s", 4)}, load: 4},
		{name: "keep_best", opts: []checkpoint.DirOption{checkpoint.Keep(1), checkpoint.KeepBest()}, best: 2,
			want: []string{genFile("s", 2), genFile("s", 4)}, load: 4},
		{name: "keep_all", opts: []checkpoint.DirOption{checkpoint.KeepAll()},
			want: []string{genFile("s", 1), genFile("s", 2), genFile("s", 3), genFile("s", 4)}, load: 4},
		{name: "damaged_newest", opts: []checkpoint.DirOption{checkpoint.Keep(1)},
			damage: func(t *testing.T, dir string) {
				// Its header intact, its checksum wrong: Load quarantines
				// it and falls back to generation 3.
				path := filepath.Join(dir, genFile("s", 4))
				data := readFile(t, path)
				data[len(data)-1] ^= 0xff
				writeFile(t, path, data)
			},
			want: []string{genFile("s", 3), genFile("s", 4)}, load: 3},
		{name: "unreadable_newest", opts: []checkpoint.DirOption{checkpoint.Keep(1)},
			damage: func(t *testing.T, dir string) {
				// Load stops at it (EISDIR) and falls back to nothing.
				if err := os.Mkdir(filepath.Join(dir, genFile("s", 5)), 0o700); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{genFile("s", 1), genFile("s", 2), genFile("s", 3), genFile("s", 4), genFile("s", 5)}},
		{name: "quarantined_stay", opts: []checkpoint.DirOption{checkpoint.Keep(1)},
			damage: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, genFile("s", 2)+".corrupt"), []byte("damaged"))
			},
			want: []string{genFile("s", 2) + ".corrupt", genFile("s", 4)}, load: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLeftovers(t, dir, tc.best, 1, 2, 3, 4)
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			lockAndRelease(t, checkpoint.NewDir(dir, tc.opts...))
			var got []string
			for _, name := range listDir(t, dir) {
				if name != "s.lock" {
					got = append(got, name)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("after Lock the directory holds %v, want %v", got, tc.want)
			}
			c, err := checkpoint.NewDir(dir, tc.opts...).Load(ctx, "s")
			switch {
			case tc.load == 0 && err == nil:
				t.Errorf("Load: generation %d, want an error", c.Generation)
			case tc.load != 0 && err != nil:
				t.Errorf("Load: %v, want generation %d", err, tc.load)
			case tc.load != 0 && c.Generation != tc.load:
				t.Errorf("Load: generation %d, want %d", c.Generation, tc.load)
			}
		})
	}
}

// TestDirSaveWithoutLockPrunesLeftovers guards the choice, documented on
// Dir, that needs no prune of its own for saves without a lock: every save
// prunes the whole session, so the first save of a session after a killed
// one prunes what the kill left. Mutation caught: a save that skips its
// prune when it is its Dir's first of the session (the one that lists the
// directory).
func TestDirSaveWithoutLockPrunesLeftovers(t *testing.T) {
	dir := t.TempDir()
	writeLeftovers(t, dir, 0, 1, 2, 3, 4)
	saveGens(t, checkpoint.NewDir(dir, checkpoint.Keep(1)), "s", 5)
	if got, want := listDir(t, dir), []string{genFile("s", 5)}; !slices.Equal(got, want) {
		t.Errorf("after a save the directory holds %v, want %v", got, want)
	}
}
