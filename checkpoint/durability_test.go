//go:build unix

package checkpoint_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// syncRecord is one fsync a Dir asked for: of a file, with its contents at
// that moment, or of the directory, with its names at that moment.
type syncRecord struct {
	path  string
	dir   bool
	data  []byte   // a file's contents when synced
	names []string // the directory's names when synced
}

// syncRecorder records every fsync of a Dir (through checkpoint.SetSync)
// and then syncs for real.
type syncRecorder struct {
	mu   sync.Mutex
	recs []syncRecord
}

func (r *syncRecorder) sync(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	rec := syncRecord{path: f.Name(), dir: fi.IsDir()}
	if rec.dir {
		if rec.names, err = f.Readdirnames(-1); err != nil {
			return err
		}
		slices.Sort(rec.names)
	} else if rec.data, err = os.ReadFile(f.Name()); err != nil {
		return err
	}
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
	return f.Sync()
}

// take returns the records since the last take.
func (r *syncRecorder) take() []syncRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	recs := r.recs
	r.recs = nil
	return recs
}

// TestDirSaveDurable: issue 24. Every generation is durable before Save (or
// SaveFrom) returns: within the save, the file's final bytes were fsynced
// (before its rename: the name synced is the temporary one), and then the
// directory, with the generation's name in it. Taking the lock syncs the
// lock file with its token, and so does releasing it. Removing any fsync
// of a file or of the directory from Dir (the mutation "no fsync" passed
// every other test), or moving it before the last write or the rename,
// fails here.
func TestDirSaveDurable(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	rec := &syncRecorder{}
	checkpoint.SetSync(d, rec.sync)

	token, release, err := d.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(dir, "s.lock")
	checkLockSynced := func(what string) {
		t.Helper()
		want := readFile(t, lockPath)
		if !bytes.Contains(want, []byte("token ")) {
			t.Fatalf("%s: the lock file holds %q, no token", what, want)
		}
		for _, r := range rec.take() {
			if r.path == lockPath && bytes.Equal(r.data, want) {
				return
			}
		}
		t.Errorf("%s: the lock file was not fsynced with its token %q", what, want)
	}
	checkLockSynced("Lock")

	for gen := uint64(1); gen <= 4; gen++ {
		c := checkpointtest.Checkpoint("s", gen)
		c.Token = token
		streamed := gen%2 == 0
		if streamed {
			state := bytes.NewReader(c.State)
			c.State = nil
			err = d.SaveFrom(ctx, c, state)
		} else {
			err = d.Save(ctx, c)
		}
		if err != nil {
			t.Fatalf("save %d: %v", gen, err)
		}
		final := genFile("s", gen)
		want := readFile(t, filepath.Join(dir, final))
		fileSynced, dirSynced := false, false
		for _, r := range rec.take() {
			switch {
			case r.dir && r.path == dir:
				// The session's first save syncs its new marker file
				// first (issue 31, item 11): before any file of the
				// session, and in the same directory sync as the
				// generation at the latest.
				marker := gen == 1 && slices.Contains(r.names, "s.session") && !slices.Contains(r.names, final)
				if !fileSynced && !marker {
					t.Errorf("save %d (streamed %t): the directory was synced before the file", gen, streamed)
				}
				if gen == 1 && !dirSynced && !slices.Contains(r.names, "s.session") {
					t.Errorf("save 1: the directory was synced without the session's marker file")
				}
				dirSynced = dirSynced || slices.Contains(r.names, final)
			case !r.dir && filepath.Dir(r.path) == dir && strings.HasSuffix(r.path, ".tmp"):
				fileSynced = fileSynced || bytes.Equal(r.data, want)
			}
		}
		if !fileSynced {
			t.Errorf("save %d (streamed %t): the generation's final bytes were not fsynced before its rename", gen, streamed)
		}
		if !dirSynced {
			t.Errorf("save %d (streamed %t): the directory was not fsynced with %s in it before the save returned", gen, streamed, final)
		}
	}

	if err := release(); err != nil {
		t.Fatal(err)
	}
	checkLockSynced("release")
}
