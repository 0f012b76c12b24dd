package checkpoint_test

import (
	"context"
	"encoding/binary"
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

// listDir returns the names in dir, sorted, without the sessions' marker
// files ("<session>.session", which TestDirMarkers checks) and the
// sessions journal (TestDirSessionsJournal's).
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".session") && e.Name() != ".sessions.journal" {
			names = append(names, e.Name())
		}
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
// damaged one quarantined (kept, renamed) and reported in Skipped, on this
// Load and the next ones, until a newer generation is saved.
func TestDirLoadFallback(t *testing.T) {
	for _, tc := range damages() {
		t.Run("seed004_corrupt_state_falls_back/"+tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir)
			saveGens(t, d, "s", 1, 2, 3)
			path := filepath.Join(dir, genFile("s", 3))
			tc.damage(t, path)
			damaged := readFile(t, path)

			want := withSkipped(checkpointtest.Checkpoint("s", 2), 3)
			if diff := checkpointtest.Diff(want, load(t, d, "s")); diff != "" {
				t.Errorf("Load mismatch (-want +got):\n%s", diff)
			}
			wantFiles := []string{genFile("s", 1), genFile("s", 2), genFile("s", 3) + ".corrupt"}
			if diff := cmp.Diff(wantFiles, listDir(t, dir)); diff != "" {
				t.Errorf("files mismatch (-want +got):\n%s", diff)
			}
			if string(readFile(t, path+".corrupt")) != string(damaged) {
				t.Error("the quarantined file does not hold the damaged bytes")
			}
			// The fallback stays visible, to this Dir and to a new one.
			for _, again := range []*checkpoint.Dir{d, checkpoint.NewDir(dir)} {
				if diff := checkpointtest.Diff(want, load(t, again, "s")); diff != "" {
					t.Errorf("second Load mismatch (-want +got):\n%s", diff)
				}
			}
			// A newer save supersedes the damaged generation.
			saveGens(t, d, "s", 4)
			if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s", 4), load(t, d, "s")); diff != "" {
				t.Errorf("Load after a newer save mismatch (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(path + ".corrupt"); err != nil {
				t.Errorf("a save deleted the quarantined file: %v", err)
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

	want := withSkipped(checkpointtest.Checkpoint("s", 2), 4, 3)
	if diff := checkpointtest.Diff(want, load(t, d, "s")); diff != "" {
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
// typed error". No file is deleted; the damage stays visible (a
// *CorruptError, never ErrNotFound) until Remove; and a fresh start never
// reuses a damaged generation's number.
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
	quarantined2 := filepath.Join(dir, genFile("s", 2)+".corrupt")
	if ce.Generation != 2 || ce.Path != quarantined2 {
		t.Errorf("CorruptError names generation %d at %s, want generation 2 at its quarantined path", ce.Generation, ce.Path)
	}
	wantMsg := fmt.Sprintf("checkpoint: corrupt generation 2 (%s): checksum mismatch; and 1 older generations damaged, all quarantined", ce.Path)
	if diff := cmp.Diff(wantMsg, err.Error()); diff != "" {
		t.Errorf("error text mismatch (-want +got):\n%s", diff)
	}
	wantFiles := []string{genFile("s", 1) + ".corrupt", quarantined2[len(dir)+1:]}
	if diff := cmp.Diff(wantFiles, listDir(t, dir)); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}

	t.Run("issue8_damage_stays_visible", func(t *testing.T) {
		for _, again := range []*checkpoint.Dir{d, checkpoint.NewDir(dir)} {
			_, err := again.Load(ctx, "s")
			if !errors.As(err, &ce) || errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("Load after the quarantine: got %v, want a *CorruptError", err)
			}
			want := fmt.Sprintf("checkpoint: corrupt generation 2 (%s): no readable generation, and damaged generations remain quarantined until the session is removed", quarantined2)
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("error text mismatch (-want +got):\n%s", diff)
			}
		}
	})

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

	t.Run("remove_clears_the_damage", func(t *testing.T) {
		if err := d.Remove(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Load(ctx, "s"); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("Load after Remove: got %v, want ErrNotFound", err)
		}
		if diff := cmp.Diff([]string{}, listDir(t, dir)); diff != "" {
			t.Errorf("files after Remove (-want +got):\n%s", diff)
		}
	})
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
		if _, release, err := d.Lock(ctx, "s"); err == nil {
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
		"s.lock":                              []byte("token 4\n"),
		"README":                              []byte("hello"),
	}
	for name, data := range stray {
		writeFile(t, filepath.Join(dir, name), data)
	}
	saveGens(t, d, "s.b", 5) // a session whose name extends "s"
	saveGens(t, d, "t", 8)

	// Generation 9 is quarantined: it is newer than 2, so it is reported.
	if diff := checkpointtest.Diff(withSkipped(checkpointtest.Checkpoint("s", 2), 9), load(t, d, "s")); diff != "" {
		t.Errorf("Load(s) mismatch (-want +got):\n%s", diff)
	}
	if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s.b", 5), load(t, d, "s.b")); diff != "" {
		t.Errorf("Load(s.b) mismatch (-want +got):\n%s", diff)
	}

	// Remove deletes the session's files only: generations, quarantined and
	// temporary files, and the lock file nobody holds.
	if err := d.Remove(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README",
		"s.0000000000000000009.ckpt",
		"s.00000000000000000009.ckpt.tmp",
		genFile("s.b", 5),
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
	// This Dir still numbers above the generations it saw.
	saveGens(t, d, "s", 1)
	if g := load(t, d, "s").Generation; g != 10 {
		t.Errorf("save after Remove written as generation %d, want 10", g)
	}
}

// loadNotDamageCase is a case of TestDirLoadNotDamage.
type loadNotDamageCase struct {
	name  string
	plant func(t *testing.T, path string)
	check func(t *testing.T, err error)
	root  bool // whether the case holds when running as root
}

// TestDirLoadNotDamage: issue 9 item 1. A newest generation that cannot be
// read for a reason other than damage stops Load with that typed error:
// nothing is skipped, nothing quarantined, and no later save prunes it.
// Root reads a file whatever its mode: as root, the permission case runs in
// a child process as nobody (issue 24; it was skipped, and CI runs as
// root).
func TestDirLoadNotDamage(t *testing.T) {
	for _, tc := range loadNotDamageCases() {
		t.Run("issue9_"+tc.name, func(t *testing.T) {
			switch {
			case tc.root:
			case runtime.GOOS == "windows":
				t.Skip("Windows reads a file whatever its mode")
			case os.Geteuid() == 0:
				runAsNobody(t, "TestDirLoadNotDamageAsNobody", envLoadCase+"="+tc.name)
				return
			}
			loadNotDamage(t, t.TempDir(), tc)
		})
	}
}

// envLoadCase names the case TestDirLoadNotDamageAsNobody runs.
const envLoadCase = "REFINE_LOAD_CASE"

// TestDirLoadNotDamageAsNobody is not a test: it is the child process, run
// as nobody, of a case of TestDirLoadNotDamage that does not hold for root.
func TestDirLoadNotDamageAsNobody(t *testing.T) {
	name, dir := os.Getenv(envLoadCase), os.Getenv(envNobodyDir)
	if name == "" || dir == "" {
		t.Skip("helper process of TestDirLoadNotDamage")
	}
	if os.Geteuid() == 0 {
		t.Fatal("running as root")
	}
	for _, tc := range loadNotDamageCases() {
		if tc.name == name {
			loadNotDamage(t, dir, tc)
			return
		}
	}
	t.Fatalf("no case %q", name)
}

func loadNotDamageCases() []loadNotDamageCase {
	return []loadNotDamageCase{
		{
			name: "newer_version",
			plant: func(t *testing.T, path string) {
				data := readFile(t, filepath.Join(filepath.Dir(path), genFile("s", 2)))
				writeFile(t, path, resealed(withUint32(withUint64(data[:len(data)-4], 20, 3), 4, checkpoint.Version+1)))
			},
			check: func(t *testing.T, err error) {
				var ve *checkpoint.VersionError
				if !errors.As(err, &ve) || ve.Version != checkpoint.Version+1 {
					t.Errorf("Load: got %v, want a *VersionError for version %d", err, checkpoint.Version+1)
				}
			},
			root: true,
		},
		{
			name:  "version_1",
			plant: func(t *testing.T, path string) { writeFile(t, path, version1()) },
			check: func(t *testing.T, err error) {
				var ve *checkpoint.VersionError
				if !errors.As(err, &ve) || ve.Version != 1 {
					t.Errorf("Load: got %v, want a *VersionError for version 1", err)
				}
			},
			root: true,
		},
		{
			name: "directory",
			plant: func(t *testing.T, path string) {
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, err error) {
				var pe *fs.PathError
				if !errors.As(err, &pe) || !errors.Is(err, syscall.EISDIR) {
					t.Errorf("Load: got %v, want an *fs.PathError matching EISDIR", err)
				}
			},
			root: true,
		},
		{
			name: "permission_denied",
			plant: func(t *testing.T, path string) {
				writeFile(t, path, readFile(t, filepath.Join(filepath.Dir(path), genFile("s", 2))))
				if err := os.Chmod(path, 0); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, err error) {
				var pe *fs.PathError
				if !errors.As(err, &pe) || !errors.Is(err, fs.ErrPermission) {
					t.Errorf("Load: got %v, want an *fs.PathError matching fs.ErrPermission", err)
				}
			},
		},
	}
}

// loadNotDamage runs tc in the empty directory dir.
func loadNotDamage(t *testing.T, dir string, tc loadNotDamageCase) {
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1, 2)
	path := filepath.Join(dir, genFile("s", 3))
	tc.plant(t, path)
	_, err := d.Load(ctx, "s")
	if err == nil || errors.Is(err, checkpoint.ErrCorrupt) || errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Load: got %v, want an error that is neither damage nor not found", err)
	}
	tc.check(t, err)
	want := []string{genFile("s", 1), genFile("s", 2), genFile("s", 3)}
	if diff := cmp.Diff(want, listDir(t, dir)); diff != "" {
		t.Errorf("files after Load mismatch (-want +got):\n%s", diff)
	}
	// A run that started fresh anyway saves 4, 5, 6 (Keep 3): the
	// readable old generations go, the unreadable one stays.
	saveGens(t, d, "s", 4, 5, 6)
	want = []string{genFile("s", 3), genFile("s", 4), genFile("s", 5), genFile("s", 6)}
	if diff := cmp.Diff(want, listDir(t, dir)); diff != "" {
		t.Errorf("files after three saves mismatch (-want +got):\n%s", diff)
	}
}

// TestDirBoundedRead: issue 9 item 5. A large stray file named like a
// generation costs a header read, not its size in memory.
func TestDirBoundedRead(t *testing.T) {
	tests := []struct {
		name   string
		size   int64
		header []byte
		reason string
	}{
		{"200MB_not_a_checkpoint", 200 << 20, []byte("stray data, not a checkpoint"), "bad magic number, not a checkpoint"},
		{"200MB_header_disagrees_with_size", 200 << 20, header(2, 100, 1000), "trailing data after the checksum"},
		{"2GiB_header_agrees_with_size", 2<<30 + 64, header(2, 36, 2<<30+4), "lengths beyond the 1 GiB limit"},
		{"header_longer_than_file", 100, header(2, 36, 1<<20), "truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir)
			saveGens(t, d, "s", 1)
			path := filepath.Join(dir, genFile("s", 2))
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(tc.header); err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(tc.size); err != nil { // sparse: no disk used
				t.Fatal(err)
			}
			f.Close()

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got := load(t, d, "s")
			runtime.ReadMemStats(&after)
			if diff := checkpointtest.Diff(withSkipped(checkpointtest.Checkpoint("s", 1), 2), got); diff != "" {
				t.Errorf("Load mismatch (-want +got):\n%s", diff)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("Load allocated %d bytes for a file of %d", n, tc.size)
			}
		})
	}
	// The reasons, through Unmarshal's sibling: the same checks on data.
	for _, tc := range tests[:1] {
		if _, err := checkpoint.Unmarshal(tc.header); err == nil || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: Unmarshal of the header: %v", tc.name, err)
		}
	}
}

// header returns a checkpoint header of the given version whose lengths
// claim a record of recLen and a state of stateLen bytes.
func header(version, recLen uint32, stateLen uint64) []byte {
	h := make([]byte, 20)
	copy(h, "RFCK")
	binary.LittleEndian.PutUint32(h[4:], version)
	binary.LittleEndian.PutUint32(h[8:], recLen)
	binary.LittleEndian.PutUint64(h[12:], stateLen)
	return h
}

func TestDirInvalidSession(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ckpt")
	d := checkpoint.NewDir(dir)
	for _, session := range []string{"", "../escape", "a/b", ".hidden", "x\n", strings.Repeat("x", 10000)} {
		c := checkpointtest.Checkpoint(session, 1)
		if err := d.Save(ctx, c); !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("Save(%.20q): got %v, want ErrInvalidSession", session, err)
		}
		_, err := d.Load(ctx, session)
		if !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("Load(%.20q): got %v, want ErrInvalidSession", session, err)
		}
		if len(err.Error()) > 200 {
			t.Errorf("Load(%.20q): the error has %d bytes: %.100s…", session, len(err.Error()), err)
		}
		if _, _, err := d.Lock(ctx, session); !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("Lock(%.20q): got %v, want ErrInvalidSession", session, err)
		}
		if err := d.Remove(ctx, session); !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("Remove(%.20q): got %v, want ErrInvalidSession", session, err)
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
	_, release, err := d.Lock(ctx, session)
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

// TestDirRemove: Remove deletes every file of the session, the lock file
// only when nobody holds the lock.
func TestDirRemove(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	_, release, err := d.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	saveGens(t, d, "s", 1, 2)
	writeFile(t, filepath.Join(dir, genFile("s", 2)), nil)
	writeFile(t, filepath.Join(dir, ".s.42.tmp"), nil)
	if _, err := d.Load(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for _, rd := range []*checkpoint.Dir{d, checkpoint.NewDir(dir)} {
		if err := rd.Remove(ctx, "s"); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"s.lock"}, listDir(t, dir)); diff != "" {
			t.Errorf("files after Remove of a locked session mismatch (-want +got):\n%s", diff)
		}
	}
	if _, _, err := checkpoint.NewDir(dir).Lock(ctx, "s"); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("Lock after Remove: got %v, want ErrLocked", err)
	}
	release()
	if err := d.Remove(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{}, listDir(t, dir)); diff != "" {
		t.Errorf("files after Remove of a released session mismatch (-want +got):\n%s", diff)
	}
	if err := d.Remove(ctx, "never"); err != nil {
		t.Errorf("Remove of a session never saved: %v", err)
	}
	missing := filepath.Join(dir, "missing")
	if err := checkpoint.NewDir(missing).Remove(ctx, "s"); err != nil {
		t.Errorf("Remove in a missing directory: %v", err)
	}
	if _, err := checkpoint.NewDir(missing).Load(ctx, "s"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Load in a missing directory: got %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load or Remove created the directory: %v", err)
	}
}

// TestDirLockRemovesTempFiles: issue 9 item 6. Taking a session's lock
// deletes the temporary files its crashed saves left, and only those.
func TestDirLockRemovesTempFiles(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1)
	for _, name := range []string{".s.123.tmp", ".s.456.tmp", ".s.b.789.tmp", ".t.1.tmp"} {
		writeFile(t, filepath.Join(dir, name), []byte("partial"))
	}
	_, release, err := d.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	want := []string{".s.b.789.tmp", ".t.1.tmp", genFile("s", 1), "s.lock"}
	if diff := cmp.Diff(want, listDir(t, dir)); diff != "" {
		t.Errorf("files after Lock mismatch (-want +got):\n%s", diff)
	}
}

// TestDirTokens: tokens grow with every holder, across Dir values, from the
// lock file or, if it was deleted, from the generations' records.
func TestDirTokens(t *testing.T) {
	dir := t.TempDir()
	var tokens []uint64
	for range 3 {
		token, release, err := checkpoint.NewDir(dir).Lock(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(readFile(t, filepath.Join(dir, "s.lock"))), fmt.Sprintf("pid %d\ntoken %d\n", os.Getpid(), token); got != want {
			t.Errorf("lock file holds %q while held, want %q", got, want)
		}
		release()
		if got, want := string(readFile(t, filepath.Join(dir, "s.lock"))), fmt.Sprintf("token %d\n", token); got != want {
			t.Errorf("lock file holds %q once released, want %q", got, want)
		}
		tokens = append(tokens, token)
	}
	if diff := cmp.Diff([]uint64{1, 2, 3}, tokens); diff != "" {
		t.Errorf("tokens mismatch (-want +got):\n%s", diff)
	}

	// A checkpoint records token 7; the lock file is then deleted by hand.
	d := checkpoint.NewDir(dir)
	writeFile(t, filepath.Join(dir, "s.lock"), []byte("token 6\n"))
	token, release, err := d.Lock(ctx, "s")
	if err != nil || token != 7 {
		t.Fatalf("Lock: token %d, %v; want 7", token, err)
	}
	c := checkpointtest.Checkpoint("s", 1)
	c.Token = token
	if err := d.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	release()
	if err := os.Remove(filepath.Join(dir, "s.lock")); err != nil {
		t.Fatal(err)
	}
	token, release, err = checkpoint.NewDir(dir).Lock(ctx, "s")
	if err != nil || token != 8 {
		t.Errorf("Lock after the lock file was deleted: token %d, %v; want 8 (above the checkpoint's)", token, err)
	}
	release()
}

// TestDirFencing: issue 9 item 3. A holder whose lock file is gone (deleted
// alone, or with the whole directory, and perhaps re-created by a second
// holder) is fenced: its saves fail with a *FencedError and never re-create
// the directory, and the second holder's saves go through.
func TestDirFencing(t *testing.T) {
	tests := []struct {
		name   string
		remove func(t *testing.T, dir string)
	}{
		{"issue9_directory_deleted", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"lock_file_deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "s.lock")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			first := checkpoint.NewDir(dir)
			token, release, err := first.Lock(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			c := checkpointtest.Checkpoint("s", 1)
			c.Token = token
			if err := first.Save(ctx, c); err != nil {
				t.Fatal(err)
			}
			tc.remove(t, dir)
			exists, _ := os.Stat(dir)

			c = checkpointtest.Checkpoint("s", 2)
			c.Token = token
			fenced := func(current uint64) {
				t.Helper()
				err := first.Save(ctx, c)
				var fe *checkpoint.FencedError
				if !errors.As(err, &fe) || !errors.Is(err, checkpoint.ErrFenced) {
					t.Fatalf("Save by the first holder: got %v, want a *FencedError", err)
				}
				if diff := cmp.Diff(&checkpoint.FencedError{Session: "s", Token: token, Current: current}, fe); diff != "" {
					t.Errorf("FencedError mismatch (-want +got):\n%s", diff)
				}
			}
			fenced(0)
			if exists == nil {
				if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the fenced save re-created the directory: %v", err)
				}
			}

			second := checkpoint.NewDir(dir)
			token2, release2, err := second.Lock(ctx, "s")
			if err != nil {
				t.Fatalf("Lock by a second holder: %v", err)
			}
			defer release2()
			c2 := checkpointtest.Checkpoint("s", 5)
			c2.Token = token2
			if err := second.Save(ctx, c2); err != nil {
				t.Fatalf("Save by the second holder: %v", err)
			}
			fenced(token2)
			if diff := checkpointtest.Diff(c2, load(t, second, "s")); diff != "" {
				t.Errorf("Load mismatch (-want the second holder's save +got):\n%s", diff)
			}
			// Releasing the first lock leaves the second holder's alone.
			release()
			if _, _, err := checkpoint.NewDir(dir).Lock(ctx, "s"); !errors.Is(err, checkpoint.ErrLocked) {
				t.Errorf("Lock after the first holder's release: got %v, want ErrLocked", err)
			}
			c2.Generation = 6
			if err := second.Save(ctx, c2); err != nil {
				t.Errorf("Save by the second holder after the first's release: %v", err)
			}
		})
	}
}

// TestDirFencedMidSave: a lock lost while a save is being written fails the
// save before it is published.
func TestDirFencedMidSave(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	token, release, err := d.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	checkpoint.SetSaveHook(d, func(stage string) error {
		if stage == "publish" {
			return os.Remove(filepath.Join(dir, "s.lock"))
		}
		return nil
	})
	c := checkpointtest.Checkpoint("s", 1)
	c.Token = token
	if err := d.Save(ctx, c); !errors.Is(err, checkpoint.ErrFenced) {
		t.Fatalf("Save: got %v, want ErrFenced", err)
	}
	if diff := cmp.Diff([]string{}, listDir(t, dir)); diff != "" {
		t.Errorf("files after a fenced save (-want +got):\n%s", diff)
	}
	// Unfenced saves go on as before.
	checkpoint.SetSaveHook(d, nil)
	c.Token = 0
	if err := d.Save(ctx, c); err != nil {
		t.Errorf("Save without a token: %v", err)
	}
}
