package checkpoint_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// TestDirGenerationOverflow: issue 24. A junk file named as generation
// 2^64-1 was quarantined, and newest+1 wrapped to 0: every later save was
// numbered below it, so every Load reported it in Skipped (and every Resume
// warned of a fallback) forever. No save can follow 2^64-1: such a file is
// not one of the session's, and a save that would need that generation is
// refused (the previous generation stays loadable).
func TestDirGenerationOverflow(t *testing.T) {
	t.Run("junk_at_max", func(t *testing.T) {
		dir := t.TempDir()
		d := checkpoint.NewDir(dir)
		saveGens(t, d, "s", 1, 2)
		junk := filepath.Join(dir, genFile("s", math.MaxUint64))
		writeFile(t, junk, []byte("junk"))
		for i, fresh := range []bool{false, true, true} {
			if fresh {
				d = checkpoint.NewDir(dir)
			}
			c := load(t, d, "s")
			if want := uint64(2 + i); c.Generation != want || len(c.Skipped) != 0 {
				t.Errorf("load %d: generation %d, skipped %v; want generation %d, nothing skipped", i, c.Generation, c.Skipped, want)
			}
			if err := d.Save(ctx, checkpointtest.Checkpoint("s", c.Generation+1)); err != nil {
				t.Fatalf("save %d: %v", i, err)
			}
		}
		if got := string(readFile(t, junk)); got != "junk" {
			t.Errorf("the junk file holds %q, want it left as it was", got)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		dir := t.TempDir()
		d := checkpoint.NewDir(dir)
		saveGens(t, d, "s", 1)
		writeFile(t, filepath.Join(dir, genFile("s", math.MaxUint64-1)), []byte("junk"))
		c := load(t, d, "s")
		if c.Generation != 1 || !slices.Equal(c.Skipped, []uint64{math.MaxUint64 - 1}) {
			t.Fatalf("Load: generation %d, skipped %v; want 1, skipped [2^64-2]", c.Generation, c.Skipped)
		}
		for _, gen := range []uint64{2, math.MaxUint64} {
			err := checkpoint.NewDir(dir).Save(ctx, checkpointtest.Checkpoint("s", gen))
			if err == nil || !strings.Contains(err.Error(), "generation numbers exhausted") {
				t.Errorf("Save of generation %d: got %v, want generation numbers exhausted", gen, err)
			}
		}
		if c := load(t, d, "s"); c.Generation != 1 {
			t.Errorf("after the refused saves Load gives generation %d, want 1", c.Generation)
		}
	})
	t.Run("save_at_max", func(t *testing.T) {
		dir := t.TempDir()
		err := checkpoint.NewDir(dir).Save(ctx, checkpointtest.Checkpoint("s", math.MaxUint64))
		if err == nil || !strings.Contains(err.Error(), "generation numbers exhausted") {
			t.Errorf("Save of generation 2^64-1: got %v, want generation numbers exhausted", err)
		}
		if names := listDir(t, dir); len(names) != 0 {
			t.Errorf("the refused save left %v", names)
		}
	})
}

// TestDirLoadOneDamaged: a session whose only generation is damaged says so
// without counting older damaged ones ("; and 0 older generations
// damaged" was the mutation `len(damaged) >= 1`).
func TestDirLoadOneDamaged(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1)
	path := filepath.Join(dir, genFile("s", 1))
	data := readFile(t, path)
	data[len(data)-1] ^= 0xff
	writeFile(t, path, data)
	_, err := d.Load(ctx, "s")
	want := "checkpoint: corrupt generation 1 (" + path + ".corrupt): checksum mismatch"
	if err == nil || err.Error() != want {
		t.Errorf("Load: got %v, want %s", err, want)
	}
}

// TestDirLoadReasonOfLargeFile: the only generation, a sparse file of
// exactly 1 GiB whose header disagrees with its size, is damaged for that
// reason, not for being too large (the bound is 1 GiB inclusive; the
// mutation `size >= maxEncoded` in openFrame said "beyond the 1 GiB limit").
func TestDirLoadReasonOfLargeFile(t *testing.T) {
	for _, tc := range []struct {
		size   int64
		reason string
	}{{1 << 30, "trailing data after the checksum"}, {1<<30 + 1, "lengths beyond the 1 GiB limit"}} {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, genFile("s", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(header(checkpoint.Version, 100, 1000)); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(tc.size); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
		f.Close()
		_, err = checkpoint.NewDir(dir).Load(ctx, "s")
		if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("Load of a %d-byte file: %v, want a *CorruptError saying %q", tc.size, err, tc.reason)
		}
	}
}

// TestDirSkippedOnlyAbove: Skipped lists quarantined generations above the
// one loaded, not a quarantined copy of the generation loaded itself (the
// mutation `q.gen >= gen`), in Load and in Sessions alike.
func TestDirSkippedOnlyAbove(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1, 2)
	writeFile(t, filepath.Join(dir, genFile("s", 2)+".corrupt"), []byte("an older damaged copy"))
	writeFile(t, filepath.Join(dir, genFile("s", 3)+".corrupt"), []byte("damaged"))
	c := load(t, d, "s")
	if c.Generation != 2 || !slices.Equal(c.Skipped, []uint64{3}) {
		t.Errorf("Load: generation %d, skipped %v; want generation 2, skipped [3]", c.Generation, c.Skipped)
	}
	got := sessionsOf(t, d)
	if len(got) != 1 || got[0].err != nil {
		t.Fatalf("Sessions: %d sessions; want s alone, without an error", len(got))
	}
	if c := got[0].c; c.Generation != 2 || !slices.Equal(c.Skipped, []uint64{3}) {
		t.Errorf("Sessions: generation %d, skipped %v; want generation 2, skipped [3]", c.Generation, c.Skipped)
	}
}

// TestDirQuarantineNames: a damaged generation is quarantined as
// "<file>.corrupt", or, when copies are there already, as the next free
// ".corrupt.N", N counting up from 1 to 1000 at most; beyond that the file
// stays where it is and the damage says why. The mutations `i--` (the
// third copy was ".corrupt.0") and `i >= 1000` (the thousandth copy was
// refused) lived.
func TestDirQuarantineNames(t *testing.T) {
	for _, tc := range []struct {
		copies int    // ".corrupt" and ".corrupt.1" to ".corrupt.<copies-1>" already there
		want   string // the suffix of the quarantined file; "" for none
	}{
		{0, ".corrupt"},
		{1, ".corrupt.1"},
		{2, ".corrupt.2"},
		{3, ".corrupt.3"},
		{1000, ".corrupt.1000"},
		{1001, ""},
	} {
		t.Run(strconv.Itoa(tc.copies), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, genFile("s", 1))
			for i := range tc.copies {
				name := path + ".corrupt"
				if i > 0 {
					name += "." + strconv.Itoa(i)
				}
				writeFile(t, name, nil)
			}
			writeFile(t, path, []byte("damaged"))
			_, err := checkpoint.NewDir(dir).Load(ctx, "s")
			var ce *checkpoint.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Load: %v, want a *CorruptError", err)
			}
			if tc.want == "" {
				if ce.Path != path || !strings.Contains(err.Error(), "could not quarantine it: too many quarantined copies") {
					t.Errorf("Load: %v (path %s); want the file left in place, too many copies", err, ce.Path)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("the damaged file is gone: %v", err)
				}
				return
			}
			if ce.Path != path+tc.want {
				t.Errorf("quarantined as %s, want %s", ce.Path, path+tc.want)
			}
			if _, err := os.Stat(path + tc.want); err != nil {
				t.Errorf("the quarantined file: %v", err)
			}
		})
	}
}

// TestDirIgnoresShortNames: files of the session's prefix too short to be
// "<session>.<20 digits>.ckpt" (the session's name alone among them) are
// not generations, and a Dir reading its directory is not confused by them
// (the mutations of the bounds `len(rest) < genDigits+len(".ckpt")` and
// `len(name) <= len(session)` read past the end of such names).
func TestDirIgnoresShortNames(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1)
	for _, name := range []string{"s", ".s", "s.0000000000000001", "s.0000000000000000001", "s.00000000000000000001.ck", "s.00000000000000000001.ckp"} {
		writeFile(t, filepath.Join(dir, name), []byte("stray"))
	}
	d = checkpoint.NewDir(dir) // a new Dir lists the directory again
	if c := load(t, d, "s"); c.Generation != 1 || len(c.Skipped) != 0 {
		t.Errorf("Load: generation %d, skipped %v; want 1, none", c.Generation, c.Skipped)
	}
	if err := d.Save(ctx, checkpointtest.Checkpoint("s", 2)); err != nil {
		t.Fatal(err)
	}
	if c := load(t, d, "s"); c.Generation != 2 {
		t.Errorf("Load after a save: generation %d, want 2", c.Generation)
	}
}

// TestGenerationNumbersOneRule guards the rule "generations run from 1 to
// 2^64-2" (issue 28, item 9): no save is numbered 0 (a save is numbered
// above the newest, from 1) or 2^64-1 (no save could follow it), so a file
// named as either is no generation of the session, and a request for
// either is for no generation. Generations does not list it, LoadGeneration
// gives an error matching ErrNotFound (which iterate.ForkFrom returns),
// Load and Sessions ignore it, and no file is touched; Memory answers as a
// Dir does. Before, LoadGeneration loaded a crafted file named as 2^64-1
// and ForkFrom forked from it, and Generations listed a crafted generation
// 0 that ForkFrom refuses.
//
// Mutations caught: validGeneration accepting 0 (Generations lists 0,
// Load returns the crafted generation 0 of session "zero", Sessions lists
// it); accepting 2^64-1 in LoadGeneration (the crafted file loads);
// LoadGeneration not checking the rule (loads both). Memory's check in
// LoadGeneration is an equivalent mutant: Memory never keeps 0 or 2^64-1
// (nextGeneration refuses the one, never gives the other).
func TestGenerationNumbersOneRule(t *testing.T) {
	invalid := []uint64{0, math.MaxUint64}
	t.Run("dir", func(t *testing.T) {
		dir := t.TempDir()
		d := checkpoint.NewDir(dir, checkpoint.KeepAll())
		saveGens(t, d, "s", 1, 2)
		for _, gen := range invalid {
			for _, session := range []string{"s", "zero"} {
				writeFile(t, filepath.Join(dir, genFile(session, gen)), mustMarshal(t, checkpointtest.Checkpoint(session, gen)))
			}
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
		if !slices.Equal(gens, []uint64{1, 2}) {
			t.Errorf("Generations: %v, want [1 2]", gens)
		}
		if list, err := d.Generations(ctx, "zero"); err != nil || len(list) != 0 {
			t.Errorf("Generations(zero): %d generations, %v; want none", len(list), err)
		}
		for _, gen := range invalid {
			for _, session := range []string{"s", "zero"} {
				c, err := d.LoadGeneration(ctx, session, gen)
				if !errors.Is(err, checkpoint.ErrNotFound) {
					t.Errorf("LoadGeneration(%s, %d): %v, %v; want an error matching ErrNotFound", session, gen, c, err)
				}
			}
		}
		if c := load(t, d, "s"); c.Generation != 2 || len(c.Skipped) != 0 {
			t.Errorf("Load(s): generation %d, skipped %v; want 2, nothing skipped", c.Generation, c.Skipped)
		}
		if c, err := d.Load(ctx, "zero"); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("Load(zero): %v, %v; want an error matching ErrNotFound", c, err)
		}
		var sessions []string
		for c, err := range d.Sessions(ctx) {
			if err != nil {
				t.Fatalf("Sessions: %v", err)
			}
			sessions = append(sessions, c.Session)
		}
		if !slices.Equal(sessions, []string{"s"}) {
			t.Errorf("Sessions: %v, want [s]", sessions)
		}
		if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
			t.Errorf("the files changed (-before +after):\n%s", diff)
		}
	})
	t.Run("memory", func(t *testing.T) {
		m := &checkpoint.Memory{KeepAll: true}
		for _, gen := range []uint64{0, 1} {
			if err := m.Save(ctx, checkpointtest.Checkpoint("s", gen)); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Save(ctx, checkpointtest.Checkpoint("s", math.MaxUint64)); err == nil {
			t.Error("Memory saved generation 2^64-1")
		}
		list, err := m.Generations(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		var gens []uint64
		for _, c := range list {
			gens = append(gens, c.Generation)
		}
		if !slices.Equal(gens, []uint64{1, 2}) {
			t.Errorf("Generations: %v, want [1 2]", gens)
		}
		for _, gen := range invalid {
			if c, err := m.LoadGeneration(ctx, "s", gen); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Errorf("LoadGeneration(%d): %v, %v; want an error matching ErrNotFound", gen, c, err)
			}
		}
	})
}
