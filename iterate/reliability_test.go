package iterate_test

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/iterate"
)

// interruptedSession leaves an interrupted session of three generations in
// dir and returns the names of its files.
func interruptedSession(t *testing.T, dir string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := iterate.New(iterate.Func(interruptAt(3, cancel)), iterate.WithMaxIterations(10),
		iterate.WithCheckpointer(checkpoint.NewDir(dir))).Run(ctx, 0)
	if !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
	return generationFiles(t, dir)
}

func generationFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, iterate.DefaultSession+".*.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// withVersion rewrites the checkpoint file at path as if a newer format
// version had written it, with a valid checksum.
func withVersion(t *testing.T, path string, version uint32) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(data[4:8], version)
	end := len(data) - 4
	binary.LittleEndian.PutUint32(data[end:], crc32.Checksum(data[:end], crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUnreadableNewestStopsRun (reliability 1): a Run over a session whose
// newest checkpoint cannot be read for a reason other than damage stops
// with that typed error, and deletes nothing: starting fresh and pruning
// would destroy the good generations.
func TestUnreadableNewestStopsRun(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spoil func(t *testing.T, newest string)
		is    error
		as    any
	}{
		{"newer format version", func(t *testing.T, newest string) { withVersion(t, newest, 99) }, checkpoint.ErrVersion, new(*checkpoint.VersionError)},
		{"directory in its place", func(t *testing.T, newest string) {
			if err := os.Remove(newest); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(newest, 0o700); err != nil {
				t.Fatal(err)
			}
		}, syscall.EISDIR, new(*fs.PathError)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := interruptedSession(t, dir)
			tt.spoil(t, files[len(files)-1])
			_, err := iterate.New(iterate.Func(step1), iterate.WithCheckpointer(checkpoint.NewDir(dir), iterate.RefuseResumable)).Run(context.Background(), 0)
			if !errors.Is(err, tt.is) || !errors.As(err, tt.as) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if got := generationFiles(t, dir); !slices.Equal(got, files) {
				t.Errorf("files now %v, want %v untouched", got, files)
			}
		})
	}

	t.Run("load error from the store", func(t *testing.T) {
		store := &checkpointtest.Faulty{Store: &checkpoint.Memory{},
			FailLoad: func(int, string) error { return syscall.EIO }}
		_, err := iterate.New(iterate.Func(step1), iterate.WithCheckpointer(store)).Run(context.Background(), 0)
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("err = %v, want EIO", err)
		}
		if saves, _ := store.Calls(); saves != 0 {
			t.Errorf("%d saves after an unreadable load, want none", saves)
		}
	})
}

// TestStrictSaveRetried (reliability 2): under strict checkpoints a
// transient save failure is retried and the run goes on; a lasting one ends
// the run without saving a final status, so that Resume continues once the
// fault is gone.
func TestStrictSaveRetried(t *testing.T) {
	t.Run("transient", func(t *testing.T) {
		store := &checkpointtest.Faulty{Store: &checkpoint.Memory{}, FailSave: func(n int, _ *checkpoint.Checkpoint) error {
			if n == 3 {
				return syscall.ENOSPC
			}
			return nil
		}}
		res, err := iterate.New(iterate.Func(step1), iterate.WithMaxIterations(5), iterate.WithCheckpointer(store, iterate.Strict)).Run(context.Background(), 0)
		if err != nil || res.Iterations != 5 {
			t.Fatalf("%v after %d iterations, want all 5", err, res.Iterations)
		}
	})

	t.Run("lasting", func(t *testing.T) {
		mem := &checkpoint.Memory{}
		broken := true
		store := &checkpointtest.Faulty{Store: mem, FailSave: func(n int, _ *checkpoint.Checkpoint) error {
			if broken && n >= 3 {
				return syscall.ENOSPC
			}
			return nil
		}}
		opts := []iterate.Option{iterate.WithMaxIterations(5), iterate.WithCheckpointer(store, iterate.Strict)}
		res, err := iterate.New(iterate.Func(step1), opts...).Run(context.Background(), 0)
		var se *iterate.StopError
		if !errors.As(err, &se) || !errors.Is(err, syscall.ENOSPC) || res.Status != iterate.Failed {
			t.Fatalf("err = %v (%s), want a failed stop caused by ENOSPC", err, res.Status)
		}
		saved, err := mem.Load(context.Background(), iterate.DefaultSession)
		if err != nil || saved.Status != string(iterate.Running) || saved.Iteration != 2 {
			t.Fatalf("saved %+v (%v), want the running checkpoint of iteration 2", saved, err)
		}
		broken = false
		res, err = iterate.New(iterate.Func(step1), opts...).Resume(context.Background())
		if err != nil || res.Status != iterate.MaxIterations || res.Iterations != 5 || res.State != 5 {
			t.Fatalf("resume after the fault: %v, %s after %d, state %d", err, res.Status, res.Iterations, res.State)
		}
	})

	t.Run("journal saves are strict too", func(t *testing.T) {
		store := &checkpointtest.Faulty{Store: &checkpoint.Memory{}, FailSave: func(int, *checkpoint.Checkpoint) error {
			return syscall.EIO
		}}
		res, err := iterate.New(iterate.Func(step1), iterate.WithMaxIterations(5), iterate.WithCheckpointer(store, iterate.Strict|iterate.Journal)).Run(context.Background(), 0)
		if !errors.Is(err, syscall.EIO) || res.Iterations != 1 {
			t.Fatalf("err = %v after %d iterations, want EIO after the first", err, res.Iterations)
		}
	})
}

// TestLostLockStopsWriter (reliability 3): when the session's directory is
// deleted under a running loop and another run takes the session, the first
// run's next save is refused with a typed error and it stops; it never
// re-creates the directory behind the new holder.
func TestLostLockStopsWriter(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ck")
	var release func() error
	defer func() {
		if release != nil {
			release()
		}
	}()
	takeOver := iterate.WithObserver(func(e iterate.Event) {
		if e, ok := e.(iterate.IterationEnded); ok && e.Iteration() == 2 {
			if err := os.RemoveAll(dir); err != nil {
				t.Error(err)
			}
			var err error
			if _, release, err = checkpoint.NewDir(dir).Lock(context.Background(), iterate.DefaultSession); err != nil {
				t.Error(err)
			}
		}
	})
	res, err := iterate.New(iterate.Func(step1), iterate.WithMaxIterations(5),
		iterate.WithCheckpointer(checkpoint.NewDir(dir)), takeOver).Run(context.Background(), 0)
	var fe *checkpoint.FencedError
	if !errors.As(err, &fe) || res.Status != iterate.Failed || res.Iterations != 2 {
		t.Fatalf("err = %v, %s after %d; want a fenced stop after 2", err, res.Status, res.Iterations)
	}
	if files := generationFiles(t, dir); len(files) != 0 {
		t.Errorf("the fenced writer saved %v behind the new holder", files)
	}
}

// TestEngineRecordVersion: a resume record written by another version of
// the engine is refused by name, not misread.
func TestEngineRecordVersion(t *testing.T) {
	store := &checkpoint.Memory{}
	c := &checkpoint.Checkpoint{Session: iterate.DefaultSession, Generation: 1, Status: string(iterate.Interrupted),
		Iteration: 1, Engine: []byte(`{"v":99}`), State: []byte(`1`)}
	if err := store.Save(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	_, err := iterate.New(iterate.Func(step1), iterate.WithCheckpointer(store)).Resume(context.Background())
	if !errors.Is(err, checkpoint.ErrVersion) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("err = %v, want a version error naming 99", err)
	}
}
