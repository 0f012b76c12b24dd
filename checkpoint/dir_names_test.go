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

// pageOf returns the sessions d.SessionsAfter(after) lists (their newest
// generations), and how many times d listed the directory for them.
func pageOf(t *testing.T, d *checkpoint.Dir, after string) ([]string, int64) {
	t.Helper()
	var lists atomic.Int64
	checkpoint.SetOnList(d, func() { lists.Add(1) })
	defer checkpoint.SetOnList(d, nil)
	var out []string
	for c, err := range d.SessionsAfter(ctx, after) {
		if err != nil {
			t.Fatalf("SessionsAfter(%q): %v", after, err)
		}
		out = append(out, fmt.Sprintf("%s@%d", c.Session, c.Generation))
	}
	return out, lists.Load()
}

// listedSessions returns what Sessions lists of the directory (a listing).
func listedSessions(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for c, err := range checkpoint.NewDir(dir).Sessions(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s@%d", c.Session, c.Generation))
	}
	return out
}

// TestDirSessionsJournal guards issue 31, item 10 for a directory's list:
// a long-lived Dir's SessionsAfter lists the directory on its first call
// only, then follows the sessions journal, and lists what Sessions (a
// listing) lists as other Dirs create sessions, save, and remove them,
// from any name on; a torn line does not swallow the next; a journal
// replaced or shortened makes it list again; a session an earlier version
// wrote is listed once a Dir locks it; the last session's Remove leaves no
// file of the store (another program's stays). Mutations caught:
// SessionsAfter listing on every call; the journal not followed (a
// session created since missing); no line written for a new session; the
// leading newline dropped (a torn line swallows the next session's); a
// replaced journal not noticed (a session created since missing); Lock not
// journaling the marker it writes for an earlier version's session; the
// journal left by the last Remove. Not caught, equivalent: the "-" lines
// ignored (a removed session has no file, and its row is skipped).
func TestDirSessionsJournal(t *testing.T) {
	dir := t.TempDir()
	w := checkpoint.NewDir(dir, checkpoint.Keep(2))
	saveGens(t, w, "b", 1, 2)
	r := checkpoint.NewDir(dir)
	check := func(when string, wantLists int64) {
		t.Helper()
		for _, after := range []string{"", "a", "b", "c", "zz"} {
			got, lists := pageOf(t, r, after)
			var want []string
			for _, s := range listedSessions(t, dir) {
				if name, _, _ := strings.Cut(s, "@"); name > after {
					want = append(want, s)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: SessionsAfter(%q) = %v, Sessions lists %v", when, after, got, want)
			}
			if lists != wantLists {
				t.Errorf("%s: SessionsAfter(%q) listed the directory %d times, want %d", when, after, lists, wantLists)
			}
			wantLists = 0
		}
	}
	check("first call", 1)
	saveGens(t, checkpoint.NewDir(dir), "a", 1)
	saveGens(t, w, "b", 0, 0)
	saveGens(t, w, "c", 1)
	check("after creating a and c", 0)
	if err := checkpoint.NewDir(dir).Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	check("after removing a", 0)

	journal := filepath.Join(dir, ".sessions.journal")
	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("+tor") // a line a crash tore
	f.Close()
	saveGens(t, w, "d", 1)
	check("after a torn line", 0)

	// A journal replaced (deleted, then written anew) lists the directory.
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	saveGens(t, w, "e", 1)
	check("after the journal was replaced", 1)

	// A session an earlier version wrote after r's first call is listed
	// once a Dir locks it (which writes its marker, journaled).
	data, err := checkpoint.Marshal(checkpointtest.Checkpoint("legacy", 3))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, genFile("legacy", 3)), data)
	_, release, err := checkpoint.NewDir(dir).Lock(ctx, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	release()
	check("after an earlier version's session was locked", 0)
	if err := w.Remove(ctx, "legacy"); err != nil {
		t.Fatal(err)
	}

	writeFile(t, filepath.Join(dir, "summary.json"), nil) // another program's
	for _, s := range []string{"b", "c", "d", "e"} {
		if err := w.Remove(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if names := listDirAll(t, dir); !slices.Equal(names, []string{"summary.json"}) {
		t.Errorf("after the last Remove the directory holds %v, want only the other program's file", names)
	}
	check("after removing them all", 1)
	saveGens(t, w, "f", 1)
	check("a new session in the empty directory", 0)
}

// TestDirSessionsJournalKill guards the order of a new session's writes:
// its journal line before its marker, so that a process killed between
// them leaves a session that a Dir following the journal lists once it
// has a generation. Mutation caught: the line appended after the marker
// (a kill between them leaves a session no follower lists: "k" missing).
func TestDirSessionsJournalKill(t *testing.T) {
	dir := t.TempDir()
	saveGens(t, checkpoint.NewDir(dir), "a", 1)
	r := checkpoint.NewDir(dir)
	pageOf(t, r, "") // r follows the journal from here
	w := checkpoint.NewDir(dir)
	checkpoint.SetSync(w, func(f *os.File) error {
		return errors.New("killed") // at the marker's directory sync: the first
	})
	if err := w.Save(ctx, checkpointtest.Checkpoint("k", 1)); err == nil {
		t.Fatal("no error")
	}
	// The process that resumes it: the marker exists.
	saveGens(t, checkpoint.NewDir(dir), "k", 1)
	if got, _ := pageOf(t, r, ""); !slices.Equal(got, []string{"a@1", "k@1"}) {
		t.Errorf("SessionsAfter = %v, want a@1 k@1", got)
	}
}

// listDirAll returns every name in dir, sorted.
func listDirAll(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
