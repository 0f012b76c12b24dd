package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// streamSaver is the method both stores of this package have for streamed
// saves, which the engine discovers by type assertion.
type streamSaver interface {
	SaveFrom(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error
}

var (
	_ streamSaver = (*checkpoint.Memory)(nil)
	_ streamSaver = (*checkpoint.Dir)(nil)
)

// chunks is a state stream that writes data in pieces of the given sizes
// (the rest in one piece), then fails with err if it is set.
type chunks struct {
	data  []byte
	sizes []int
	err   error
	calls int
}

func (s *chunks) WriteTo(w io.Writer) (int64, error) {
	s.calls++
	var n int64
	rest := s.data
	for _, size := range s.sizes {
		size = min(size, len(rest))
		m, err := w.Write(rest[:size])
		n += int64(m)
		if err != nil {
			return n, err
		}
		rest = rest[size:]
	}
	if len(rest) > 0 {
		m, err := w.Write(rest)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, s.err
}

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// randomSizes returns write sizes that cover n bytes in pieces of 1 byte to
// 100 KiB.
func randomSizes(n int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 9))
	var sizes []int
	for n > 0 {
		s := min(1+rng.IntN(100<<10), n)
		if rng.IntN(4) == 0 {
			s = min(1+rng.IntN(16), n)
		}
		sizes = append(sizes, s)
		n -= s
	}
	return sizes
}

// TestDirSaveFromFormat: a streamed save writes, byte for byte, the file
// that Marshal gives for the same checkpoint with State set, whatever the
// state's size and however the stream cuts its writes; and it loads back.
func TestDirSaveFromFormat(t *testing.T) {
	for _, size := range []int{0, 1, 100, 64<<10 + 1, 1<<20 + 3} {
		for _, cut := range []string{"one_write", "random_writes", "byte_writes"} {
			if cut == "byte_writes" && size > 100 {
				continue
			}
			t.Run(cut+"/"+strconv.Itoa(size), func(t *testing.T) {
				dir := t.TempDir()
				d := checkpoint.NewDir(dir)
				state := randomBytes(size, uint64(size))
				s := &chunks{data: state}
				switch cut {
				case "random_writes":
					s.sizes = randomSizes(size, uint64(size))
				case "byte_writes":
					for range size {
						s.sizes = append(s.sizes, 1)
					}
				}
				c := checkpointtest.Checkpoint("s", 5)
				c.Token = 0
				c.State = nil
				if err := d.SaveFrom(ctx, c, s); err != nil {
					t.Fatal(err)
				}
				if c.State != nil {
					t.Errorf("SaveFrom set its argument's State")
				}
				c.State = state
				want, err := checkpoint.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				got := readFile(t, filepath.Join(dir, genFile("s", 5)))
				if !bytes.Equal(got, want) {
					t.Fatalf("the streamed file (%d bytes) differs from Marshal's encoding (%d bytes)", len(got), len(want))
				}
				if diff := checkpointtest.Diff(c, load(t, d, "s")); diff != "" {
					t.Errorf("Load mismatch (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{genFile("s", 5)}, listDir(t, dir)); diff != "" {
					t.Errorf("files mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// streamStores returns both stores of this package, each with generations 1
// and 2 of session "s" saved, and a function listing the Dir's files.
func streamStores(t *testing.T) map[string]struct {
	store interface {
		streamSaver
		Save(ctx context.Context, c *checkpoint.Checkpoint) error
		Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error)
		Lock(ctx context.Context, session string) (uint64, func() error, error)
	}
	files func() []string
} {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	m := new(checkpoint.Memory)
	saveGens(t, d, "s", 1, 2)
	for g := uint64(1); g <= 2; g++ {
		if err := m.Save(ctx, checkpointtest.Checkpoint("s", g)); err != nil {
			t.Fatal(err)
		}
	}
	type entry = struct {
		store interface {
			streamSaver
			Save(ctx context.Context, c *checkpoint.Checkpoint) error
			Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error)
			Lock(ctx context.Context, session string) (uint64, func() error, error)
		}
		files func() []string
	}
	return map[string]entry{
		"Dir":    {d, func() []string { return listDir(t, dir) }},
		"Memory": {m, func() []string { return nil }},
	}
}

// TestSaveFromFailures: a stream that fails, panics, takes the checkpoint
// above 1 GiB, or is given with a State or nil, or under a stale token,
// saves nothing: no file is left, and the previous generation loads.
func TestSaveFromFailures(t *testing.T) {
	errStream := errors.New("the encoder failed")
	huge := make([]byte, 1<<30) // never written to, so never touched
	tests := []struct {
		name    string
		stream  func() io.WriterTo
		prepare func(c *checkpoint.Checkpoint)
		want    func(err error) bool
	}{
		{
			name: "stream_fails_midway",
			stream: func() io.WriterTo {
				// past the first chunks: the writer goroutine has started
				return &chunks{data: randomBytes(2<<20, 1), sizes: []int{300 << 10}, err: errStream}
			},
			want: func(err error) bool { return errors.Is(err, errStream) },
		},
		{
			name:   "stream_fails_at_once",
			stream: func() io.WriterTo { return &chunks{err: errStream} },
			want:   func(err error) bool { return errors.Is(err, errStream) },
		},
		{
			name:   "above_1GiB_in_one_write",
			stream: func() io.WriterTo { return &chunks{data: huge} },
			want:   func(err error) bool { return err != nil && strings.Contains(err.Error(), "above the limit of 1 GiB") },
		},
		{
			name:   "above_1GiB_after_smaller_writes",
			stream: func() io.WriterTo { return &crossing{small: randomBytes(10<<10, 2), big: huge[:1<<30-(10<<10)]} },
			want:   func(err error) bool { return err != nil && strings.Contains(err.Error(), "above the limit of 1 GiB") },
		},
		{
			name:    "state_set",
			stream:  func() io.WriterTo { return &chunks{} },
			prepare: func(c *checkpoint.Checkpoint) { c.State = []byte("x") },
			want:    func(err error) bool { return err != nil && strings.Contains(err.Error(), "State") },
		},
		{
			name:   "nil_stream",
			stream: func() io.WriterTo { return nil },
			want:   func(err error) bool { return err != nil },
		},
		{
			name:    "stale_token",
			stream:  func() io.WriterTo { return &chunks{data: []byte("state")} },
			prepare: func(c *checkpoint.Checkpoint) { c.Token = 99 },
			want:    func(err error) bool { return errors.Is(err, checkpoint.ErrFenced) },
		},
	}
	for _, tc := range tests {
		for name, st := range streamStores(t) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				before := st.files()
				c := checkpointtest.Checkpoint("s", 3)
				c.State = nil
				if tc.prepare != nil {
					tc.prepare(c)
				}
				var stream io.WriterTo
				if s := tc.stream(); s != nil {
					stream = s
				}
				err := st.store.SaveFrom(ctx, c, stream)
				if !tc.want(err) {
					t.Fatalf("SaveFrom: got error %v", err)
				}
				if diff := cmp.Diff(before, st.files()); diff != "" {
					t.Errorf("files after a failed save mismatch (-want +got):\n%s", diff)
				}
				got, err := st.store.Load(ctx, "s")
				if err != nil {
					t.Fatal(err)
				}
				if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s", 2), got); diff != "" {
					t.Errorf("Load after a failed save mismatch (-want +got):\n%s", diff)
				}
				if ch, ok := stream.(*chunks); ok && tc.name == "stale_token" && ch.calls != 0 {
					t.Errorf("a fenced save ran its stream")
				}
			})
		}
	}
}

// crossing writes small, then big in one write.
type crossing struct{ small, big []byte }

func (s *crossing) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.small)
	if err != nil {
		return int64(n), err
	}
	m, err := w.Write(s.big)
	return int64(n + m), err
}

// panicking writes a little, or a lot (enough for the file's writer
// goroutine to start), and panics.
type panicking struct{ lot bool }

func (p panicking) WriteTo(w io.Writer) (int64, error) {
	w.Write([]byte("partial"))
	if p.lot {
		w.Write(make([]byte, 3<<20))
	}
	panic("encoder bug")
}

// TestDirSaveFromPanic: a stream that panics leaves no temporary file.
func TestDirSaveFromPanic(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1)
	for _, lot := range []bool{false, true} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("the stream's panic was not passed on")
				}
			}()
			d.SaveFrom(ctx, &checkpoint.Checkpoint{Session: "s"}, panicking{lot: lot})
		}()
	}
	if diff := cmp.Diff([]string{genFile("s", 1)}, listDir(t, dir)); diff != "" {
		t.Errorf("files after a panicking stream mismatch (-want +got):\n%s", diff)
	}
	saveGens(t, d, "s", 2) // the session's lock was not left held
}

// TestDirSaveFromGenerationTaken: another writer takes the generation a
// streamed save chose while its file is written; the save is published as
// the next generation, its generation and checksum rewritten in place
// (the stream runs once), and the file is still Marshal's.
func TestDirSaveFromGenerationTaken(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1, 2)
	other := checkpointtest.Checkpoint("s", 3)
	taken := false
	checkpoint.SetSaveHook(d, func(stage string) error {
		if stage == "publish" && !taken {
			taken = true
			if err := checkpoint.NewDir(dir).Save(ctx, other); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	state := randomBytes(300<<10, 3)
	s := &chunks{data: state, sizes: randomSizes(len(state), 3)}
	c := checkpointtest.Checkpoint("s", 3)
	c.State = nil
	if err := d.SaveFrom(ctx, c, s); err != nil {
		t.Fatal(err)
	}
	if s.calls != 1 {
		t.Errorf("the stream ran %d times, want 1", s.calls)
	}
	c.State = state
	c.Generation = 4
	want, err := checkpoint.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, genFile("s", 4))); !bytes.Equal(got, want) {
		t.Errorf("generation 4 differs from Marshal's encoding")
	}
	if diff := checkpointtest.Diff(c, load(t, d, "s")); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(dir, genFile("s", 3))); !bytes.Equal(got, mustMarshal(t, other)) {
		t.Errorf("the other writer's generation 3 was changed")
	}
}

func mustMarshal(t *testing.T, c *checkpoint.Checkpoint) []byte {
	t.Helper()
	data, err := checkpoint.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSaveFromRoundTrip: both stores give back a streamed state, a fenced
// save with the lock's token included, and Memory keeps its own copy.
func TestSaveFromRoundTrip(t *testing.T) {
	for name, st := range streamStores(t) {
		t.Run(name, func(t *testing.T) {
			token, release, err := st.store.Lock(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			for g := uint64(3); g <= 6; g++ { // Memory recycles evicted states from 4 on
				state := randomBytes(int(g)*1000, g)
				c := checkpointtest.Checkpoint("s", g)
				c.Token = token
				c.State = nil
				if err := st.store.SaveFrom(ctx, c, &chunks{data: state, sizes: randomSizes(len(state), g)}); err != nil {
					t.Fatal(err)
				}
				clear(state[:len(state)/2]) // the store keeps its own copy
				c.State = randomBytes(int(g)*1000, g)
				got, err := st.store.Load(ctx, "s")
				if err != nil {
					t.Fatal(err)
				}
				if diff := checkpointtest.Diff(c, got); diff != "" {
					t.Errorf("generation %d: Load mismatch (-want +got):\n%s", g, diff)
				}
			}
		})
	}
}
