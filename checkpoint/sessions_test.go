package checkpoint_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// listed is one session as Sessions yields it.
type listed struct {
	c   *checkpoint.Checkpoint
	err error
}

// sessionsOf collects what d.Sessions yields.
func sessionsOf(t *testing.T, d *checkpoint.Dir) []listed {
	t.Helper()
	var out []listed
	for c, err := range d.Sessions(ctx) {
		if c == nil {
			t.Fatalf("Sessions yielded a nil checkpoint with the error %v", err)
		}
		out = append(out, listed{c, err})
	}
	return out
}

// envelopeOf returns c without Engine and State.
func envelopeOf(c *checkpoint.Checkpoint) *checkpoint.Checkpoint {
	c = c.Clone()
	c.Engine, c.State = nil, nil
	return c
}

// snapshot returns every file of dir with its contents, to show that a
// listing changed nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	for _, name := range listDir(t, dir) {
		path := filepath.Join(dir, name)
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
			out[name] = string(readFile(t, path))
		} else {
			out[name] = "(not a regular file)"
		}
	}
	return out
}

// TestDirSessions: every session with generations, in name order, each as
// the envelope its Load returns; lock, temporary and stray files are not
// sessions; a large state costs no memory.
func TestDirSessions(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "b", 1, 2, 3, 4)
	saveGens(t, d, "a.ckpt", 7)
	big := checkpointtest.Checkpoint("big", 1)
	big.State = make([]byte, 16<<20)
	big.Engine = []byte(strings.Repeat("e", 1<<20))
	if err := d.Save(ctx, big); err != nil {
		t.Fatal(err)
	}
	_, release, err := d.Lock(ctx, "only-locked") // a lock file, no generation
	if err != nil {
		t.Fatal(err)
	}
	release()
	// Among the stray files, names with 19 and 20 characters before
	// ".ckpt", too short for ".<20 digits>.ckpt" (a bound moved by two
	// read before the name's start).
	for _, name := range []string{"notes.txt", ".b.123.tmp", "x.1.ckpt", ".hidden.00000000000000000001.ckpt", "c.00000000000000000001.ckpt.bak",
		"0123456789012345678.ckpt", "01234567890123456789.ckpt"} {
		writeFile(t, filepath.Join(dir, name), []byte("stray"))
	}
	before := snapshot(t, dir)

	var m1, m2 runtime.MemStats
	runtime.ReadMemStats(&m1)
	got := sessionsOf(t, d)
	runtime.ReadMemStats(&m2)
	if n := m2.TotalAlloc - m1.TotalAlloc; n > 1<<20 {
		t.Errorf("Sessions allocated %d bytes: it reads more than the envelopes", n)
	}
	want := []listed{
		{envelopeOf(checkpointtest.Checkpoint("a.ckpt", 7)), nil},
		{envelopeOf(checkpointtest.Checkpoint("b", 4)), nil},
		{envelopeOf(big), nil},
	}
	if diff := cmp.Diff(want, got, listedCmp); diff != "" {
		t.Errorf("Sessions mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("Sessions changed the directory (-before +after):\n%s", diff)
	}
	for _, l := range got {
		if diff := checkpointtest.Diff(envelopeOf(load(t, d, l.c.Session)), l.c); diff != "" {
			t.Errorf("session %q: listed envelope differs from Load (-load +listed):\n%s", l.c.Session, diff)
		}
	}
}

var listedCmp = cmp.Comparer(func(a, b listed) bool {
	return checkpointtest.Diff(a.c, b.c) == "" && (a.err == nil) == (b.err == nil) &&
		(a.err == nil || a.err.Error() == b.err.Error())
})

func TestDirSessionsMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "there")
	if got := sessionsOf(t, checkpoint.NewDir(dir)); len(got) != 0 {
		t.Errorf("Sessions of a missing directory: %d sessions", len(got))
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sessions created the directory: %v", err)
	}
}

// TestDirSessionsFallback: a damaged newest generation is skipped as Load
// skips it, but nothing is quarantined: the listing is read-only.
func TestDirSessionsFallback(t *testing.T) {
	for _, tc := range damages() {
		if tc.name == "flipped_byte" {
			continue // inside the state: see TestDirSessionsChecksumNotVerified
		}
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir)
			saveGens(t, d, "s", 1, 2, 3)
			tc.damage(t, filepath.Join(dir, genFile("s", 3)))
			before := snapshot(t, dir)

			want := []listed{{withSkipped(envelopeOf(checkpointtest.Checkpoint("s", 2)), 3), nil}}
			if diff := cmp.Diff(want, sessionsOf(t, d), listedCmp); diff != "" {
				t.Errorf("Sessions mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
				t.Errorf("Sessions changed the directory (-before +after):\n%s", diff)
			}
			// Load agrees (and quarantines); the listing then still does.
			if diff := checkpointtest.Diff(want[0].c, envelopeOf(load(t, d, "s"))); diff != "" {
				t.Errorf("Load disagrees with the listing (-listed +load):\n%s", diff)
			}
			if diff := cmp.Diff(want, sessionsOf(t, d), listedCmp); diff != "" {
				t.Errorf("Sessions after the quarantine mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDirSessionsAllDamaged: a session without a readable generation yields
// its name, the damaged generations and a *CorruptError, before and after a
// Load quarantined them.
func TestDirSessionsAllDamaged(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1, 2)
	saveGens(t, d, "t", 1)
	ds := damages()
	ds[1].damage(t, filepath.Join(dir, genFile("s", 2)))
	ds[3].damage(t, filepath.Join(dir, genFile("s", 1)))
	before := snapshot(t, dir)

	got := sessionsOf(t, d)
	if len(got) != 2 || got[1].err != nil || got[1].c.Session != "t" {
		t.Fatalf("Sessions: got %v, want s (damaged) and t", got)
	}
	want := withSkipped(&checkpoint.Checkpoint{Session: "s"}, 2, 1)
	if diff := checkpointtest.Diff(want, got[0].c); diff != "" {
		t.Errorf("damaged session's entry mismatch (-want +got):\n%s", diff)
	}
	var ce *checkpoint.CorruptError
	if !errors.As(got[0].err, &ce) || !errors.Is(got[0].err, checkpoint.ErrCorrupt) {
		t.Fatalf("damaged session: got error %v, want a *CorruptError", got[0].err)
	}
	path2 := filepath.Join(dir, genFile("s", 2))
	wantMsg := fmt.Sprintf("checkpoint: corrupt generation 2 (%s): truncated; and 1 older generations damaged", path2)
	if diff := cmp.Diff(wantMsg, got[0].err.Error()); diff != "" {
		t.Errorf("error text mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("Sessions changed the directory (-before +after):\n%s", diff)
	}

	if _, err := d.Load(ctx, "s"); !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Fatalf("Load: %v", err)
	}
	got = sessionsOf(t, d)
	if diff := checkpointtest.Diff(want, got[0].c); diff != "" {
		t.Errorf("after the quarantine: entry mismatch (-want +got):\n%s", diff)
	}
	wantMsg = fmt.Sprintf("checkpoint: corrupt generation 2 (%s.corrupt): no readable generation, and damaged generations remain quarantined until the session is removed", path2)
	if got[0].err == nil || got[0].err.Error() != wantMsg {
		t.Errorf("after the quarantine: got error %v, want %q", got[0].err, wantMsg)
	}
}

// TestDirSessionsNotDamage: what keeps Load from reading a generation
// without being damage is yielded with the session, nothing skipped.
func TestDirSessionsNotDamage(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
		check func(err error) bool
	}{
		{"newer_version", func(t *testing.T, path string) {
			data := readFile(t, filepath.Join(filepath.Dir(path), genFile("s", 2)))
			writeFile(t, path, resealed(withUint32(withUint64(data[:len(data)-4], 20, 3), 4, checkpoint.Version+1)))
		}, func(err error) bool {
			var ve *checkpoint.VersionError
			return errors.As(err, &ve) && ve.Version == checkpoint.Version+1
		}},
		{"version_1", func(t *testing.T, path string) { writeFile(t, path, version1()) }, func(err error) bool {
			var ve *checkpoint.VersionError
			return errors.As(err, &ve) && ve.Version == 1
		}},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, func(err error) bool { return errors.Is(err, syscall.EISDIR) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir)
			saveGens(t, d, "s", 1, 2)
			tc.plant(t, filepath.Join(dir, genFile("s", 3)))
			got := sessionsOf(t, d)
			if len(got) != 1 || !tc.check(got[0].err) || errors.Is(got[0].err, checkpoint.ErrCorrupt) {
				t.Fatalf("Sessions: got %v, want s with the error", got)
			}
			if diff := checkpointtest.Diff(&checkpoint.Checkpoint{Session: "s"}, got[0].c); diff != "" {
				t.Errorf("entry mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("flipped_version_is_damage", func(t *testing.T) {
		dir := t.TempDir()
		d := checkpoint.NewDir(dir)
		saveGens(t, d, "s", 1, 2)
		path := filepath.Join(dir, genFile("s", 2))
		writeFile(t, path, withUint32(readFile(t, path), 4, checkpoint.Version+1)) // checksum not updated
		want := []listed{{withSkipped(envelopeOf(checkpointtest.Checkpoint("s", 1)), 2), nil}}
		if diff := cmp.Diff(want, sessionsOf(t, d), listedCmp); diff != "" {
			t.Errorf("Sessions mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestDirSessionsChecksumNotVerified: the listing does not read the state,
// so damage inside it goes unnoticed there; Load finds it.
func TestDirSessionsChecksumNotVerified(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1, 2)
	path := filepath.Join(dir, genFile("s", 2))
	data := readFile(t, path)
	data[len(data)-10] ^= 0x10 // in the state
	writeFile(t, path, data)
	want := []listed{{envelopeOf(checkpointtest.Checkpoint("s", 2)), nil}}
	if diff := cmp.Diff(want, sessionsOf(t, d), listedCmp); diff != "" {
		t.Errorf("Sessions mismatch (-want +got):\n%s", diff)
	}
	if got := load(t, d, "s"); got.Generation != 1 {
		t.Errorf("Load returned generation %d, want 1 (2 fails its checksum)", got.Generation)
	}
}

// TestDirSessionsWhileLocked: listing a session another run holds works and
// leaves the lock and its file as they were.
func TestDirSessionsWhileLocked(t *testing.T) {
	dir := t.TempDir()
	holder := checkpoint.NewDir(dir)
	token, release, err := holder.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c := checkpointtest.Checkpoint("s", 1)
	c.Token = token
	if err := holder.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	want := []listed{{envelopeOf(c), nil}}
	if diff := cmp.Diff(want, sessionsOf(t, checkpoint.NewDir(dir)), listedCmp); diff != "" {
		t.Errorf("Sessions mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("Sessions changed the directory (-before +after):\n%s", diff)
	}
	if _, again, err := checkpoint.NewDir(dir).Lock(ctx, "s"); !errors.Is(err, checkpoint.ErrLocked) {
		if again != nil {
			again()
		}
		t.Errorf("Lock after the listing: got %v, want ErrLocked (the holder keeps it)", err)
	}
}

// TestDirSessionsUnlistable: a directory that cannot be listed yields its
// error once.
func TestDirSessionsUnlistable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	writeFile(t, path, nil)
	n := 0
	for c, err := range checkpoint.NewDir(path).Sessions(ctx) {
		n++
		if c != nil || err == nil || !strings.Contains(err.Error(), "checkpoint: listing "+path) {
			t.Errorf("Sessions of a file: got (%v, %v), want (nil, the listing's error)", c, err)
		}
	}
	if n != 1 {
		t.Errorf("yielded %d times, want once", n)
	}
}

func TestMemorySessions(t *testing.T) {
	m := &checkpoint.Memory{Keep: 1}
	for _, c := range []*checkpoint.Checkpoint{checkpointtest.Checkpoint("z", 1), checkpointtest.Checkpoint("a", 3), checkpointtest.Checkpoint("z", 2)} {
		if err := m.Save(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Save(ctx, checkpointtest.Checkpoint("gone", 1)); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	var got []listed
	for c, err := range m.Sessions(ctx) {
		got = append(got, listed{c, err})
	}
	want := []listed{
		{envelopeOf(checkpointtest.Checkpoint("a", 3)), nil},
		{envelopeOf(checkpointtest.Checkpoint("z", 2)), nil},
	}
	if diff := cmp.Diff(want, got, listedCmp); diff != "" {
		t.Errorf("Sessions mismatch (-want +got):\n%s", diff)
	}
}

// FuzzSessions: whatever a generation file holds, the listing never panics,
// and when the file reads as a checkpoint the listed envelope is its
// envelope.
func FuzzSessions(f *testing.F) {
	for _, c := range []*checkpoint.Checkpoint{
		checkpointtest.Checkpoint("s", 3),
		{Session: "s"},
		checkpointtest.Checkpoint("other", 3),
	} {
		data, err := checkpoint.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(withUint32(data, 8, 1<<31))
	}
	f.Add(version1())
	f.Add([]byte("RFCK"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, genFile("s", 1)), data)
		got := sessionsOf(t, checkpoint.NewDir(dir))
		if len(got) != 1 {
			t.Fatalf("Sessions: %d sessions, want 1", len(got))
		}
		c, err := checkpoint.Unmarshal(data)
		if err == nil && c.Session == "s" {
			if got[0].err != nil {
				t.Fatalf("Sessions: %v, but the file unmarshals", got[0].err)
			}
			if diff := checkpointtest.Diff(envelopeOf(c), got[0].c); diff != "" {
				t.Errorf("envelope mismatch (-unmarshal +listed):\n%s", diff)
			}
		}
	})
}

// TestDirSessionsOneDamaged: a session whose only generation is damaged is
// listed with that damage, without counting older damaged generations
// ("; and 0 older generations damaged" was the mutation
// `len(damaged) >= 1`), as Load reports it (TestDirLoadOneDamaged).
func TestDirSessionsOneDamaged(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	path := filepath.Join(dir, genFile("s", 1))
	writeFile(t, path, []byte("not a checkpoint, but long enough for a header"))
	got := sessionsOf(t, d)
	if len(got) != 1 {
		t.Fatalf("Sessions: %d sessions, want 1", len(got))
	}
	want := "checkpoint: corrupt generation 1 (" + path + "): bad magic number, not a checkpoint"
	if err := got[0].err; err == nil || err.Error() != want || !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Errorf("Sessions: got %v, want %s", err, want)
	}
}

// TestDirSessionsReasons: Sessions, which reads only a generation's
// envelope, finds the same damage as Unmarshal in a record cut at its
// fixed fields, on both sides of their end, in both versions (a record of
// exactly its fixed fields was "shorter than its fixed fields" under the
// mutation `left <= fixedLen`).
func TestDirSessionsReasons(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"record_of_fixed_fields_only", resealed(append(header(2, 36, 0), make([]byte, 36)...))},
		{"record_one_short_of_fixed_fields", resealed(append(header(2, 35, 0), make([]byte, 35)...))},
		{"v3_record_of_fixed_fields_only", resealed(append(header(checkpoint.Version, 52, 0), make([]byte, 52)...))},
		{"v3_record_one_short_of_fixed_fields", resealed(append(header(checkpoint.Version, 51, 0), make([]byte, 51)...))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want *checkpoint.CorruptError
			if _, err := checkpoint.Unmarshal(tc.data); !errors.As(err, &want) {
				t.Fatalf("Unmarshal: %v, want a *CorruptError", err)
			}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, genFile("s", 1)), tc.data)
			got := sessionsOf(t, checkpoint.NewDir(dir))
			var ce *checkpoint.CorruptError
			if len(got) != 1 || !errors.As(got[0].err, &ce) {
				t.Fatalf("Sessions: %d sessions, want 1 with a *CorruptError", len(got))
			}
			if ce.Err.Error() != want.Err.Error() {
				t.Errorf("Sessions: damage %q, want Unmarshal's %q", ce.Err, want.Err)
			}
		})
	}
}
