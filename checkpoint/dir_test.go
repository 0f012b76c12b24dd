package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

var ctx = context.Background()

// genFile is the file name of generation gen of session.
func genFile(session string, gen uint64) string {
	return fmt.Sprintf("%s.%020d.ckpt", session, gen)
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func saveGens(t *testing.T, d *checkpoint.Dir, session string, gens ...uint64) {
	t.Helper()
	for _, g := range gens {
		if err := d.Save(ctx, checkpointtest.Checkpoint(session, g)); err != nil {
			t.Fatalf("Save generation %d: %v", g, err)
		}
	}
}

func load(t *testing.T, d *checkpoint.Dir, session string) *checkpoint.Checkpoint {
	t.Helper()
	c, err := d.Load(ctx, session)
	if err != nil {
		t.Fatalf("Load(%q): %v", session, err)
	}
	return c
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDirFileFormat(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	c := checkpointtest.Checkpoint("build", 7)
	saveGens(t, d, "build", 7)
	want, err := checkpoint.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"build.00000000000000000007.ckpt"}, listDir(t, dir)); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(dir, genFile("build", 7))); string(got) != string(want) {
		t.Errorf("the file differs from Marshal's encoding (%d bytes, want %d)", len(got), len(want))
	}
	if d.Path() != dir {
		t.Errorf("Path() = %q, want %q", d.Path(), dir)
	}
}

func TestDirKeep(t *testing.T) {
	tests := []struct {
		name string
		opts []checkpoint.DirOption
		want []uint64
	}{
		{"default_3", nil, []uint64{5, 6, 7}},
		{"keep_1", []checkpoint.DirOption{checkpoint.Keep(1)}, []uint64{7}},
		{"keep_0_means_1", []checkpoint.DirOption{checkpoint.Keep(0)}, []uint64{7}},
		{"keep_5", []checkpoint.DirOption{checkpoint.Keep(5)}, []uint64{3, 4, 5, 6, 7}},
		{"keep_10_more_than_saved", []checkpoint.DirOption{nil, checkpoint.Keep(10)}, []uint64{1, 2, 3, 4, 5, 6, 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir, tc.opts...)
			saveGens(t, d, "s", 1, 2, 3, 4, 5, 6, 7)
			var want []string
			for _, g := range tc.want {
				want = append(want, genFile("s", g))
			}
			if diff := cmp.Diff(want, listDir(t, dir)); diff != "" {
				t.Errorf("files after 7 saves mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDirKeepAcrossInstances checks pruning of generations another Dir (a
// previous process) left behind.
func TestDirKeepAcrossInstances(t *testing.T) {
	dir := t.TempDir()
	saveGens(t, checkpoint.NewDir(dir, checkpoint.Keep(5)), "s", 1, 2, 3, 4, 5)
	saveGens(t, checkpoint.NewDir(dir, checkpoint.Keep(2)), "s", 6)
	if diff := cmp.Diff([]string{genFile("s", 5), genFile("s", 6)}, listDir(t, dir)); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
}

// damage returns ways to damage the file of a generation.
func damages() []struct {
	name   string
	damage func(t *testing.T, path string)
	reason string
} {
	return []struct {
		name   string
		damage func(t *testing.T, path string)
		reason string
	}{
		{"flipped_byte", func(t *testing.T, path string) {
			data := readFile(t, path)
			data[len(data)/2] ^= 0x10
			writeFile(t, path, data)
		}, "checksum mismatch"},
		{"truncated", func(t *testing.T, path string) {
			data := readFile(t, path)
			writeFile(t, path, data[:len(data)-5])
		}, "truncated"},
		{"empty", func(t *testing.T, path string) { writeFile(t, path, nil) }, "truncated"},
		{"not_a_checkpoint", func(t *testing.T, path string) { writeFile(t, path, []byte(`{"iteration": 3}`)) }, "bad magic number, not a checkpoint"},
		{"other_session", func(t *testing.T, path string) {
			data, err := checkpoint.Marshal(checkpointtest.Checkpoint("other", 3))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, data)
		}, `records session "other", not "s"`},
	}
}

// TestDirLoadFallback: seed 004 "State file corrupted or unparseable" and
// seed 000 "restore on failure": the newest good generation is loaded, the
// damaged one quarantined (kept, renamed) and reported in the notes.
func TestDirLoadFallback(t *testing.T) {
	for _, tc := range damages() {
		t.Run("seed004_corrupt_state_falls_back/"+tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir)
			saveGens(t, d, "s", 1, 2, 3)
			path := filepath.Join(dir, genFile("s", 3))
			tc.damage(t, path)
			damaged := readFile(t, path)

			got := load(t, d, "s")
			want := checkpointtest.Checkpoint("s", 2)
			want.Notes = []string{fmt.Sprintf("generation 3 damaged (%s), quarantined as %s.corrupt; fell back to generation 2", tc.reason, genFile("s", 3))}
			if diff := checkpointtest.Diff(want, got); diff != "" {
				t.Errorf("Load mismatch (-want +got):\n%s", diff)
			}
			wantFiles := []string{genFile("s", 1), genFile("s", 2), genFile("s", 3) + ".corrupt"}
			if diff := cmp.Diff(wantFiles, listDir(t, dir)); diff != "" {
				t.Errorf("files mismatch (-want +got):\n%s", diff)
			}
			if string(readFile(t, path+".corrupt")) != string(damaged) {
				t.Error("the quarantined file does not hold the damaged bytes")
			}
			// Loading again finds generation 2 without a note.
			want.Notes = nil
			if diff := checkpointtest.Diff(want, load(t, d, "s")); diff != "" {
				t.Errorf("second Load mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDirLoadFallbackSeveral(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir, checkpoint.Keep(4))
	saveGens(t, d, "s", 1, 2, 3, 4)
	ds := damages()
	ds[0].damage(t, filepath.Join(dir, genFile("s", 4)))
	ds[1].damage(t, filepath.Join(dir, genFile("s", 3)))
	// A quarantined copy of generation 3 exists already (copied by hand).
	writeFile(t, filepath.Join(dir, genFile("s", 3)+".corrupt"), []byte("older damage"))

	got := load(t, d, "s")
	want := checkpointtest.Checkpoint("s", 2)
	want.Notes = []string{
		"generation 4 damaged (checksum mismatch), quarantined as s.00000000000000000004.ckpt.corrupt; fell back to generation 2",
		"generation 3 damaged (truncated), quarantined as s.00000000000000000003.ckpt.corrupt.1; fell back to generation 2",
	}
	if diff := checkpointtest.Diff(want, got); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}
	wantFiles := []string{
		genFile("s", 1), genFile("s", 2),
		genFile("s", 3) + ".corrupt", genFile("s", 3) + ".corrupt.1",
		genFile("s", 4) + ".corrupt",
	}
	if diff := cmp.Diff(wantFiles, listDir(t, dir)); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
	if got := string(readFile(t, filepath.Join(dir, genFile("s", 3)+".corrupt"))); got != "older damage" {
		t.Errorf("an earlier quarantined file was overwritten: holds %q", got)
	}
}

// TestDirLoadAllDamaged: seed 004 "State file corrupted or unparseable →
// typed error (the engine warns and starts fresh)". No file is deleted, and a
// fresh start never reuses a damaged generation's number.
func TestDirLoadAllDamaged(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1, 2)
	ds := damages()
	ds[0].damage(t, filepath.Join(dir, genFile("s", 2)))
	ds[3].damage(t, filepath.Join(dir, genFile("s", 1)))

	_, err := d.Load(ctx, "s")
	var ce *checkpoint.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Fatalf("Load: got error %v, want a *CorruptError", err)
	}
	if errors.Is(err, checkpoint.ErrNotFound) {
		t.Error("the error matches ErrNotFound too")
	}
	if ce.Generation != 2 || ce.Path != filepath.Join(dir, genFile("s", 2)+".corrupt") {
		t.Errorf("CorruptError names generation %d at %s, want generation 2 at its quarantined path", ce.Generation, ce.Path)
	}
	wantMsg := fmt.Sprintf("checkpoint: corrupt generation 2 (%s): checksum mismatch; and 1 older generations damaged, all quarantined", ce.Path)
	if diff := cmp.Diff(wantMsg, err.Error()); diff != "" {
		t.Errorf("error text mismatch (-want +got):\n%s", diff)
	}
	wantFiles := []string{genFile("s", 1) + ".corrupt", genFile("s", 2) + ".corrupt"}
	if diff := cmp.Diff(wantFiles, listDir(t, dir)); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name string
		d    *checkpoint.Dir
	}{
		{"same_dir", d},
		{"new_dir_value", checkpoint.NewDir(dir)},
	} {
		t.Run("seed004_start_fresh/"+tc.name, func(t *testing.T) {
			fresh := checkpointtest.Checkpoint("s", 1)
			if err := tc.d.Save(ctx, fresh); err != nil {
				t.Fatal(err)
			}
			got := load(t, tc.d, "s")
			if got.Generation <= 2 {
				t.Errorf("a fresh save was written as generation %d, reusing a damaged generation's number", got.Generation)
			}
			fresh.Generation = got.Generation
			if diff := checkpointtest.Diff(fresh, got); diff != "" {
				t.Errorf("Load after a fresh start mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDirSaveNeverOverwrites: a save whose generation exists on disk (the
// damaged newest, not yet loaded; or a generation written by another Dir)
// gets the next free generation.
func TestDirSaveNeverOverwrites(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string, d *checkpoint.Dir)
		save    uint64 // generation saved
		wantGen uint64 // generation written
		keep    []string
	}{
		{
			name: "damaged_newest_same_dir",
			prepare: func(t *testing.T, dir string, d *checkpoint.Dir) {
				saveGens(t, d, "s", 1, 2, 3)
				writeFile(t, filepath.Join(dir, genFile("s", 3)), []byte("damaged"))
			},
			save: 3, wantGen: 4, keep: []string{genFile("s", 3)},
		},
		{
			name: "damaged_newest_new_dir_value",
			prepare: func(t *testing.T, dir string, d *checkpoint.Dir) {
				saveGens(t, checkpoint.NewDir(dir), "s", 1, 2, 3)
				writeFile(t, filepath.Join(dir, genFile("s", 3)), []byte("damaged"))
			},
			save: 3, wantGen: 4, keep: []string{genFile("s", 3)},
		},
		{
			name: "older_generation",
			prepare: func(t *testing.T, dir string, d *checkpoint.Dir) {
				saveGens(t, d, "s", 1, 2, 3)
			},
			save: 2, wantGen: 4,
		},
		{
			name: "generation_0",
			prepare: func(t *testing.T, dir string, d *checkpoint.Dir) {
				saveGens(t, d, "s", 1)
			},
			save: 0, wantGen: 2,
		},
		{
			name: "written_behind_our_back",
			prepare: func(t *testing.T, dir string, d *checkpoint.Dir) {
				saveGens(t, d, "s", 1, 2)
				// Another writer (a second Dir value) adds generation 3.
				saveGens(t, checkpoint.NewDir(dir), "s", 3)
			},
			save: 3, wantGen: 4, keep: []string{genFile("s", 3)},
		},
		{
			name: "higher_generation_kept",
			prepare: func(t *testing.T, dir string, d *checkpoint.Dir) {
				saveGens(t, d, "s", 1)
			},
			save: 10, wantGen: 10,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir)
			tc.prepare(t, dir, d)
			before := map[string]string{}
			for _, name := range tc.keep {
				before[name] = string(readFile(t, filepath.Join(dir, name)))
			}
			c := checkpointtest.Checkpoint("s", tc.save)
			if err := d.Save(ctx, c); err != nil {
				t.Fatal(err)
			}
			if c.Generation != tc.save {
				t.Errorf("Save changed its argument's Generation to %d", c.Generation)
			}
			for _, name := range tc.keep {
				if got := string(readFile(t, filepath.Join(dir, name))); got != before[name] {
					t.Errorf("%s was overwritten", name)
				}
			}
			data := readFile(t, filepath.Join(dir, genFile("s", tc.wantGen)))
			got, err := checkpoint.Unmarshal(data)
			if err != nil {
				t.Fatal(err)
			}
			want := checkpointtest.Checkpoint("s", tc.save)
			want.Generation = tc.wantGen
			if diff := checkpointtest.Diff(want, got); diff != "" {
				t.Errorf("generation %d mismatch (-want +got):\n%s", tc.wantGen, diff)
			}
		})
	}
}

// TestDirExternalRemoval: the cached listing stays correct when files or the
// whole directory disappear behind the Dir's back.
func TestDirExternalRemoval(t *testing.T) {
	tests := []struct {
		name   string
		remove func(t *testing.T, dir string)
	}{
		{"files", func(t *testing.T, dir string) {
			for _, name := range listDir(t, dir) {
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"directory", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			d := checkpoint.NewDir(dir)
			saveGens(t, d, "s", 1, 2, 3)
			tc.remove(t, dir)
			if _, err := d.Load(ctx, "s"); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Errorf("Load after removal: got %v, want ErrNotFound", err)
			}
			saveGens(t, d, "s", 4, 5, 6, 7)
			if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s", 7), load(t, d, "s")); diff != "" {
				t.Errorf("Load mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{genFile("s", 5), genFile("s", 6), genFile("s", 7)}, listDir(t, dir)); diff != "" {
				t.Errorf("files mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDirSaveFailure: seed 004 "Disk full — can't persist state → error
// returned (the engine decides: best effort)" and seed 000 "checkpoint save
// failure is a warning": a failed save returns an error matching the cause,
// leaves no temporary file, and the previous generations stay loadable.
func TestDirSaveFailure(t *testing.T) {
	for _, stage := range []string{"write", "sync", "publish"} {
		for _, cause := range []error{syscall.ENOSPC, syscall.EIO} {
			t.Run(fmt.Sprintf("seed004_disk_full_best_effort/%s_%v", stage, cause), func(t *testing.T) {
				dir := t.TempDir()
				d := checkpoint.NewDir(dir)
				saveGens(t, d, "s", 1, 2)
				before := listDir(t, dir)
				checkpoint.SetSaveHook(d, func(s string) error {
					if s == stage {
						return cause
					}
					return nil
				})
				err := d.Save(ctx, checkpointtest.Checkpoint("s", 3))
				if !errors.Is(err, cause) {
					t.Fatalf("Save: got error %v, want one matching %v", err, cause)
				}
				if diff := cmp.Diff(before, listDir(t, dir)); diff != "" {
					t.Errorf("files after a failed save mismatch (-want +got):\n%s", diff)
				}
				if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s", 2), load(t, d, "s")); diff != "" {
					t.Errorf("Load after a failed save mismatch (-want +got):\n%s", diff)
				}
				checkpoint.SetSaveHook(d, nil)
				saveGens(t, d, "s", 3)
				if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s", 3), load(t, d, "s")); diff != "" {
					t.Errorf("Load after recovering mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestDirUnusablePath: the directory's path names a regular file, so nothing
// can be created in it. Every operation reports it; none panics.
func TestDirUnusablePath(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, []byte("not a directory"))
	for _, path := range []string{file, filepath.Join(file, "sub")} {
		d := checkpoint.NewDir(path)
		err := d.Save(ctx, checkpointtest.Checkpoint("s", 1))
		if err == nil || (runtime.GOOS != "windows" && !errors.Is(err, syscall.ENOTDIR)) {
			t.Errorf("Save in %s: got %v, want ENOTDIR", path, err)
		}
		if _, err := d.Load(ctx, "s"); err == nil || errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("Load in %s: got %v, want a listing error", path, err)
		}
		if release, err := d.Lock(ctx, "s"); err == nil {
			release()
			t.Errorf("Lock in %s: got no error", path)
		}
		if err := d.Remove(ctx, "s"); err == nil {
			t.Errorf("Remove in %s: got no error", path)
		}
	}
	if got := string(readFile(t, file)); got != "not a directory" {
		t.Errorf("the file was changed: %q", got)
	}
}

// TestDirIgnoresStrayFiles: a crash mid-save leaves a temporary file, which
// Load ignores (crash safety); files of other sessions and unrelated files
// are never taken for the session's.
func TestDirIgnoresStrayFiles(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1, 2)
	newer, err := checkpoint.Marshal(checkpointtest.Checkpoint("s", 9))
	if err != nil {
		t.Fatal(err)
	}
	stray := map[string][]byte{
		".s.123456.tmp":                       newer[:len(newer)/2], // crash while writing
		".s.654321.tmp":                       newer,                // crash before publishing
		"s.00000000000000000009.ckpt.tmp":     newer,
		"s.0000000000000000009.ckpt":          newer, // 19 digits
		"s.00000000000000000009.ckpt.corrupt": newer,
		"s.lock":                              []byte("pid 1\n"),
		"README":                              []byte("hello"),
	}
	for name, data := range stray {
		writeFile(t, filepath.Join(dir, name), data)
	}
	saveGens(t, d, "s.b", 5) // a session whose name extends "s"
	saveGens(t, d, "t", 8)

	if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s", 2), load(t, d, "s")); diff != "" {
		t.Errorf("Load(s) mismatch (-want +got):\n%s", diff)
	}
	if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s.b", 5), load(t, d, "s.b")); diff != "" {
		t.Errorf("Load(s.b) mismatch (-want +got):\n%s", diff)
	}

	// Remove deletes the session's generations and temporary files only.
	if err := d.Remove(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README",
		"s.0000000000000000009.ckpt",
		"s.00000000000000000009.ckpt.corrupt",
		"s.00000000000000000009.ckpt.tmp",
		genFile("s.b", 5),
		"s.lock",
		genFile("t", 8),
	}
	got := listDir(t, dir)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files after Remove mismatch (-want +got):\n%s", diff)
	}
	if _, err := d.Load(ctx, "s"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Load after Remove: got %v, want ErrNotFound", err)
	}
	// The quarantined generation 9 still counts: a new save goes above it.
	saveGens(t, d, "s", 1)
	if g := load(t, d, "s").Generation; g != 10 {
		t.Errorf("save after Remove written as generation %d, want 10", g)
	}
}

func TestDirLoadNotDamage(t *testing.T) {
	t.Run("newer_version", func(t *testing.T) {
		dir := t.TempDir()
		d := checkpoint.NewDir(dir)
		saveGens(t, d, "s", 1, 2)
		path := filepath.Join(dir, genFile("s", 2))
		data := readFile(t, path)
		writeFile(t, path, resealed(withUint32(data[:len(data)-4], 4, checkpoint.Version+1)))
		_, err := d.Load(ctx, "s")
		var ve *checkpoint.VersionError
		if !errors.As(err, &ve) || ve.Version != checkpoint.Version+1 {
			t.Fatalf("Load: got %v, want a *VersionError for version %d", err, checkpoint.Version+1)
		}
		if diff := cmp.Diff([]string{genFile("s", 1), genFile("s", 2)}, listDir(t, dir)); diff != "" {
			t.Errorf("files mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("unreadable_file", func(t *testing.T) {
		dir := t.TempDir()
		d := checkpoint.NewDir(dir)
		saveGens(t, d, "s", 1)
		if err := os.Mkdir(filepath.Join(dir, genFile("s", 2)), 0o755); err != nil {
			t.Fatal(err)
		}
		_, err := d.Load(ctx, "s")
		if err == nil || errors.Is(err, checkpoint.ErrCorrupt) {
			t.Fatalf("Load: got %v, want a read error", err)
		}
		if diff := cmp.Diff([]string{genFile("s", 1), genFile("s", 2)}, listDir(t, dir)); diff != "" {
			t.Errorf("files mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestDirInvalidSession(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ckpt")
	d := checkpoint.NewDir(dir)
	for _, session := range []string{"", "../escape", "a/b", ".hidden", "x\n"} {
		c := checkpointtest.Checkpoint(session, 1)
		if err := d.Save(ctx, c); !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("Save(%q): got %v, want ErrInvalidSession", session, err)
		}
		if _, err := d.Load(ctx, session); !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("Load(%q): got %v, want ErrInvalidSession", session, err)
		}
		if _, err := d.Lock(ctx, session); !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("Lock(%q): got %v, want ErrInvalidSession", session, err)
		}
		if err := d.Remove(ctx, session); !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("Remove(%q): got %v, want ErrInvalidSession", session, err)
		}
	}
	if diff := cmp.Diff([]string{}, listDir(t, root)); diff != "" {
		t.Errorf("files created (-want +got):\n%s", diff)
	}
}

func TestDirLongSession(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	session := strings.Repeat("s", checkpoint.MaxSessionLen)
	saveGens(t, d, session, 1)
	if _, err := d.Load(ctx, session); err != nil {
		t.Fatal(err)
	}
	release, err := d.Lock(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := d.Remove(ctx, session); err != nil {
		t.Fatal(err)
	}
}

func TestDirZeroValue(t *testing.T) {
	t.Chdir(t.TempDir())
	var d checkpoint.Dir
	saveGens(t, &d, "s", 1, 2, 3, 4)
	if diff := cmp.Diff([]string{genFile("s", 2), genFile("s", 3), genFile("s", 4)}, listDir(t, ".")); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
}

func TestDirRemoveKeepsLockAndQuarantine(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	release, err := d.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	saveGens(t, d, "s", 1, 2)
	writeFile(t, filepath.Join(dir, genFile("s", 2)), nil)
	if _, err := d.Load(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{genFile("s", 2) + ".corrupt", "s.lock"}, listDir(t, dir)); diff != "" {
		t.Errorf("files after Remove mismatch (-want +got):\n%s", diff)
	}
	if err := d.Remove(ctx, "never"); err != nil {
		t.Errorf("Remove of a session never saved: %v", err)
	}
	if err := checkpoint.NewDir(filepath.Join(dir, "missing")).Remove(ctx, "s"); err != nil {
		t.Errorf("Remove in a missing directory: %v", err)
	}
	if _, err := checkpoint.NewDir(filepath.Join(dir, "missing")).Load(ctx, "s"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Load in a missing directory: got %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load or Remove created the directory: %v", err)
	}
}
