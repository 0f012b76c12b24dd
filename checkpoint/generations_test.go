package checkpoint_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
)

// TestDirGenerationsDamage: Generations leaves out a generation it cannot
// read (damaged, or a copy of another generation's file), and
// LoadGeneration says why: a *CorruptError naming the file and the
// generation asked for, ErrNotFound for a generation without a file, and
// another error for one that is not a file. Neither moves a file.
func TestDirGenerationsDamage(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir, checkpoint.KeepAll())
	saveGens(t, d, "s", 1, 2, 3)
	writeFile(t, filepath.Join(dir, genFile("s", 2)), []byte("not a checkpoint, but long enough for a header"))
	writeFile(t, filepath.Join(dir, genFile("s", 4)), readFile(t, filepath.Join(dir, genFile("s", 3))))
	if err := os.Mkdir(filepath.Join(dir, genFile("s", 6)), 0o700); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)

	list, err := d.Generations(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	var gens []uint64
	for _, c := range list {
		gens = append(gens, c.Generation)
	}
	if !slices.Equal(gens, []uint64{1, 3}) {
		t.Errorf("Generations: %v, want [1 3]", gens)
	}

	for _, tc := range []struct {
		gen     uint64
		corrupt string // the damage, "" for another error
		is      error
	}{
		{2, "bad magic number", checkpoint.ErrCorrupt},
		{4, "records generation 3", checkpoint.ErrCorrupt},
		{5, "", checkpoint.ErrNotFound},
		{6, "", syscall.EISDIR},
	} {
		_, err := d.LoadGeneration(ctx, "s", tc.gen)
		if !errors.Is(err, tc.is) {
			t.Errorf("LoadGeneration(%d): %v, want an error matching %v", tc.gen, err, tc.is)
			continue
		}
		var ce *checkpoint.CorruptError
		switch {
		case tc.corrupt == "" && errors.As(err, &ce):
			t.Errorf("LoadGeneration(%d): %v, want no *CorruptError", tc.gen, err)
		case tc.corrupt != "" && !errors.As(err, &ce):
			t.Errorf("LoadGeneration(%d): %v, want a *CorruptError", tc.gen, err)
		case tc.corrupt != "" && (ce.Generation != tc.gen || ce.Path != filepath.Join(dir, genFile("s", tc.gen)) || !strings.Contains(ce.Err.Error(), tc.corrupt)):
			t.Errorf("LoadGeneration(%d): generation %d, path %s, damage %v; want %d, its file, %q", tc.gen, ce.Generation, ce.Path, ce.Err, tc.gen, tc.corrupt)
		}
	}
	if c, err := d.LoadGeneration(ctx, "s", 3); err != nil || c.Generation != 3 {
		t.Errorf("LoadGeneration(3): %v, %v; want generation 3", c, err)
	}
	if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("Generations and LoadGeneration changed the directory (-before +after):\n%s", diff)
	}
}
