package checkpoint_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// createSession does what a loop does with a new session: lock it, load it
// (nothing), save two generations, release it.
func createSession(t testing.TB, d *checkpoint.Dir, session string) {
	t.Helper()
	token, release, err := d.Lock(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Load(ctx, session); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Load of new session %s: %v, want ErrNotFound", session, err)
	}
	for gen := uint64(1); gen <= 2; gen++ {
		c := checkpointtest.Checkpoint(session, gen)
		c.Token = token
		if err := d.Save(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}

// TestDirNewSessionListsNothing guards issue 31, item 11: creating a
// session (Lock, Load, Save, release) never lists the directory, so it
// costs the same at 100,000 sessions as at 10; a Dir lists it once, at its
// first new session, for sessions left without a marker file. Mutations
// caught: Save, Load or Lock listing the directory for a new session (scan
// in place of scanUnlessFresh, Lock's fresh forced false); the unmarked
// sessions listed on every call.
func TestDirNewSessionListsNothing(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		createSession(t, checkpoint.NewDir(dir), fmt.Sprintf("old%d", i))
	}
	d := checkpoint.NewDir(dir)
	var lists atomic.Int64
	checkpoint.SetOnList(d, func() { lists.Add(1) })
	createSession(t, d, "first")
	if n := lists.Load(); n != 1 {
		t.Errorf("the Dir's first new session listed the directory %d times, want once", n)
	}
	lists.Store(0)
	for i := range 5 {
		createSession(t, d, fmt.Sprintf("new%d", i))
	}
	if n := lists.Load(); n != 0 {
		t.Errorf("creating 5 more sessions listed the directory %d times, want 0", n)
	}
	// A session with files is listed as before: Load of an old one.
	c, err := d.Load(ctx, "old1")
	if err != nil || c.Generation != 2 {
		t.Fatalf("Load(old1) = %v, %v; want generation 2", c, err)
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("Load of a session with files listed the directory %d times, want once", n)
	}
}

// TestDirUnmarkedSessions guards the sessions a version without marker
// files left (issue 31, item 11): their generations, quarantined and
// temporary files are found though they have no marker, by Load, Save
// (which goes on from their newest generation, pruning as ever) and Lock
// (which removes their temporary files). Mutation caught: fresh ignoring
// the Dir's one listing (an unmarked session taken for a new one: Load
// says ErrNotFound, a save writes generation 1 under the newest).
func TestDirUnmarkedSessions(t *testing.T) {
	dir := t.TempDir()
	for _, gen := range []uint64{4, 5} {
		data, err := checkpoint.Marshal(checkpointtest.Checkpoint("legacy", gen))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, genFile("legacy", gen)), data)
	}
	writeFile(t, filepath.Join(dir, ".temps.123.tmp"), []byte("x"))
	d := checkpoint.NewDir(dir, checkpoint.Keep(2))
	c, err := d.Load(ctx, "legacy")
	if err != nil || c.Generation != 5 {
		t.Fatalf("Load of an unmarked session = %v, %v; want generation 5", c, err)
	}
	if err := d.Save(ctx, checkpointtest.Checkpoint("legacy", 1)); err != nil {
		t.Fatal(err)
	}
	want := []string{".temps.123.tmp", genFile("legacy", 5), genFile("legacy", 6)}
	if got := listDir(t, dir); !slices.Equal(got, want) {
		t.Errorf("after a save of the unmarked session: %v, want %v", got, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "legacy.session")); err != nil {
		t.Errorf("the save left no marker: %v", err)
	}
	_, release, err := d.Lock(ctx, "temps")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if got := listDir(t, dir); slices.Contains(got, ".temps.123.tmp") {
		t.Errorf("Lock of an unmarked session with only a temporary file left it: %v", got)
	}
}

// TestDirMarkers checks the marker file of a session: created by its first
// save, mode 0600 (before the umask), never opened if something is at its
// name (a link planted there is not followed), removed by Remove last, and
// a removed session is new again. Mutations caught: the marker's mode
// 0644; Remove leaving the marker (a removed session's Dir would list the
// directory for it for ever).
func TestDirMarkers(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1, 2)
	marker := filepath.Join(dir, "s.session")
	fi, err := os.Lstat(marker)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&^0o600 != 0 {
		t.Errorf("marker mode %v, want at most 0600", fi.Mode().Perm())
	}

	target := filepath.Join(t.TempDir(), "precious")
	writeFile(t, target, []byte("precious"))
	if err := os.Symlink(target, filepath.Join(dir, "p.session")); err != nil {
		t.Fatal(err)
	}
	saveGens(t, d, "p", 1)
	if got := string(readFile(t, target)); got != "precious" {
		t.Errorf("a link at the marker's name was written through: %q", got)
	}

	if err := d.Remove(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left the marker: %v", err)
	}
	d2 := checkpoint.NewDir(dir)
	if _, err := d2.Load(ctx, "s"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Load after Remove: %v, want ErrNotFound", err)
	}
}

func writeFileB(b *testing.B, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDirNewSession measures creating one session (Lock, Load of
// nothing, two saves, release) in a directory that already holds N
// sessions (each a generation file and a marker, written directly), with
// a long-lived Dir, as a loop host or a fleet's worker has. Issue 31, item
// 11: the cost must not grow with N. NEW_SESSION_BENCH_N adds a size
// (100,000 takes a few seconds to set up).
func BenchmarkDirNewSession(b *testing.B) {
	sizes := []int{10, 10000}
	if v := os.Getenv("NEW_SESSION_BENCH_N"); v != "" {
		var n int
		if _, err := fmt.Sscan(v, &n); err == nil && n > 0 {
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			data, err := checkpoint.Marshal(checkpointtest.Checkpoint("x", 1))
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				// The file's recorded session is not its name's: no
				// matter, the benchmark never reads these.
				s := fmt.Sprintf("s%07d", i)
				writeFileB(b, filepath.Join(dir, genFile(s, 1)), data)
				writeFileB(b, filepath.Join(dir, s+".session"), nil)
			}
			d := checkpoint.NewDir(dir)
			createSession(b, d, "warm") // the Dir's one listing
			var lists atomic.Int64
			checkpoint.SetOnList(d, func() { lists.Add(1) })
			i := 0
			b.ResetTimer()
			for b.Loop() {
				createSession(b, d, fmt.Sprintf("new%d", i))
				i++
			}
			b.ReportMetric(float64(lists.Load())/float64(i), "listings/op")
		})
	}
}

// TestDirSessionsAfter: Dir.SessionsAfter lists what Sessions lists from
// a name on, the name itself excluded, whether or not a session has it
// (issue 31, item 10: a viewer's next page). Mutations caught: the session
// named after listed (`<= after` as `< after`), the search skipped.
func TestDirSessionsAfter(t *testing.T) {
	d := checkpoint.NewDir(t.TempDir())
	var names []string
	for i := range 12 {
		name := fmt.Sprintf("s%02d", i*2)
		names = append(names, name)
		saveGens(t, d, name, 1)
	}
	for _, after := range []string{"", "a", "s00", "s05", "s10", "s22", "z"} {
		var got, want []string
		for c, err := range d.SessionsAfter(ctx, after) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, c.Session)
		}
		for _, n := range names {
			if n > after {
				want = append(want, n)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("SessionsAfter(%q) = %v, want %v", after, got, want)
		}
	}
}
