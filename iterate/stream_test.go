package iterate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// bigNotes is a state with a large byte field and fields that JSON escapes.
type bigNotes struct {
	N    int    `json:"n"`
	Text string `json:"text"`
	Blob []byte `json:"blob"`
}

func notesStep(cancelAt int, cancel func()) func(context.Context, bigNotes, iterate.Round) (bigNotes, error) {
	return func(_ context.Context, s bigNotes, r iterate.Round) (bigNotes, error) {
		s.N++
		s.Text += "<&>\u2028"
		s.Blob = append(s.Blob, bytes.Repeat([]byte{byte(s.N)}, 100<<10)...)
		if r.Iteration == cancelAt {
			cancel()
		}
		return s, nil
	}
}

// plainStore hides the store's SaveFrom: the engine hands it bytes.
type plainStore struct{ iterate.Checkpointer }

// TestStreamedSaveResume: with a Dir (streaming) or a store without SaveFrom
// (bytes from Marshal), a run interrupted in iteration 2 resumes, whichever
// saved it, to the same final state; the state saved is the JSON of the
// state, with the newline of a json.Encoder when streamed.
func TestStreamedSaveResume(t *testing.T) {
	for _, tc := range []struct{ name, first, second string }{
		{"stream_then_stream", "dir", "dir"},
		{"bytes_then_stream", "plain", "dir"},
		{"stream_then_bytes", "dir", "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store := func(kind string) iterate.Checkpointer {
				if kind == "plain" {
					return plainStore{checkpoint.NewDir(dir)}
				}
				return checkpoint.NewDir(dir)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := func(kind string) []iterate.Option {
				return []iterate.Option{iterate.WithMaxIterations(4), iterate.WithSession("s"),
					iterate.WithCheckpointer(store(kind), iterate.Strict)}
			}
			_, err := iterate.New(iterate.Func(notesStep(2, cancel)), opts(tc.first)...).Run(ctx, bigNotes{})
			if !errors.Is(err, iterate.ErrInterrupted) {
				t.Fatalf("Run: %v, want interrupted", err)
			}
			c, err := checkpoint.NewDir(dir).Load(context.Background(), "s")
			if err != nil {
				t.Fatal(err)
			}
			var saved bigNotes
			if err := json.Unmarshal(c.State, &saved); err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(saved)
			if tc.first == "dir" {
				want = append(want, '\n')
			}
			if !bytes.Equal(c.State, want) {
				t.Errorf("state saved is not the JSON of the state (%d bytes, want %d)", len(c.State), len(want))
			}
			res, err := iterate.New(iterate.Func(notesStep(0, nil)), opts(tc.second)...).Resume(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var wantState bigNotes
			step := notesStep(0, nil)
			for i := 1; i <= 4; i++ {
				wantState, _ = step(context.Background(), wantState, iterate.Round{Iteration: i})
			}
			if res.State.N != 4 || res.State.Text != wantState.Text || !bytes.Equal(res.State.Blob, wantState.Blob) {
				t.Errorf("resumed to n=%d, %d text bytes, %d blob bytes; want n=4, %d, %d",
					res.State.N, len(res.State.Text), len(res.State.Blob), len(wantState.Text), len(wantState.Blob))
			}
		})
	}
}

// faultyCodec is the JSON codec, whose Encode writes part of the encoding
// and fails on the calls fail selects.
type faultyCodec struct {
	calls atomic.Int32
	fail  func(call int32) bool
}

var errEncode = errors.New("encoder broke")

func (c *faultyCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (c *faultyCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
func (c *faultyCodec) Encode(w io.Writer, v any) error {
	n := c.calls.Add(1)
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if c.fail(n) {
		w.Write(data[:len(data)/2])
		return errEncode
	}
	_, err = w.Write(data)
	return err
}

var _ iterate.StreamCodec = (*faultyCodec)(nil)

// TestStreamedSaveEncoderFails: an encoder that fails halfway through a
// save ends a strict run with an "encoding state" error matching its own;
// the previous checkpoint stays the latest, no temporary file is left, and
// the session resumes from it.
func TestStreamedSaveEncoderFails(t *testing.T) {
	dir := t.TempDir()
	codec := &faultyCodec{fail: func(n int32) bool { return n >= 2 }} // the save after iteration 2 on
	step := notesStep(0, nil)
	_, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(4), iterate.WithSession("s"),
		iterate.WithCodec(codec), iterate.WithCheckpointer(checkpoint.NewDir(dir), iterate.Strict)).Run(context.Background(), bigNotes{})
	if !errors.Is(err, errEncode) || !strings.Contains(err.Error(), "encoding state: ") {
		t.Fatalf("Run: got %v, want the encoder's error as encoding state", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	c, err := checkpoint.NewDir(dir).Load(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if c.Iteration != 1 || c.Status != string(iterate.Running) {
		t.Errorf("latest checkpoint: iteration %d, %s; want iteration 1, running", c.Iteration, c.Status)
	}
	res, err := iterate.New(iterate.Func(step), iterate.WithMaxIterations(4), iterate.WithSession("s"),
		iterate.WithCheckpointer(checkpoint.NewDir(dir), iterate.Strict)).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.State.N != 4 {
		t.Errorf("resumed to n=%d, want 4", res.State.N)
	}
}

// TestStreamedSaveStrictRetry: a strict save whose stream fails once is
// retried, running the encoder again, and succeeds.
func TestStreamedSaveStrictRetry(t *testing.T) {
	for _, kind := range []string{"Dir", "Memory"} {
		t.Run(kind, func(t *testing.T) {
			var store iterate.Checkpointer = &checkpoint.Memory{}
			if kind == "Dir" {
				store = checkpoint.NewDir(t.TempDir())
			}
			codec := &faultyCodec{fail: func(n int32) bool { return n == 1 }}
			var saveErrs int
			res, err := iterate.New(iterate.Func(notesStep(0, nil)), iterate.WithMaxIterations(1), iterate.WithSession("s"),
				iterate.WithCodec(codec), iterate.WithCheckpointer(store, iterate.Strict),
				iterate.WithObserver(func(e iterate.Event) {
					if cs, ok := e.(iterate.CheckpointSaved); ok && cs.Err != nil {
						saveErrs++
					}
				})).Run(context.Background(), bigNotes{})
			if err != nil {
				t.Fatal(err)
			}
			if saveErrs != 0 || codec.calls.Load() != 3 { // one retry, then the final save
				t.Errorf("%d failed saves and %d encodes, want 0 and 3", saveErrs, codec.calls.Load())
			}
			c, err := store.Load(context.Background(), "s")
			if err != nil {
				t.Fatal(err)
			}
			var got bigNotes
			if err := json.Unmarshal(c.State, &got); err != nil || got.N != res.State.N || !bytes.Equal(got.Blob, res.State.Blob) {
				t.Errorf("saved state n=%d (%v), want n=%d", got.N, err, res.State.N)
			}
		})
	}
}

// TestJSONEncodeMatchesMarshal: the default codec's Encode writes what its
// Marshal returns and a newline, escaping alike.
func TestJSONEncodeMatchesMarshal(t *testing.T) {
	codec, ok := iterate.JSON.(iterate.StreamCodec)
	if !ok {
		t.Fatal("iterate.JSON is not a StreamCodec")
	}
	for _, v := range []any{
		nil, []byte(nil), []byte{}, []byte("\x00\xff<>"), "<a href=\"x\">&\u2028\u2029</a>\x00\xff",
		bigNotes{N: 3, Text: "<&>", Blob: []byte{1, 2, 3}}, map[string]any{"z": 1.5, "a": []int{1}},
		randomState(3 << 14), randomState(3<<14 + 1), randomState(3<<15 + 2), randomState(1<<20 + 7),
	} {
		want, err := iterate.JSON.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := codec.Encode(&buf, v); err != nil {
			t.Fatal(err)
		}
		if got := buf.String(); got != string(want)+"\n" {
			t.Errorf("Encode(%.40q…) = %.80q…, want %.80q… and a newline (%d bytes, want %d)", fmt.Sprint(v), got, want, len(got), len(want)+1)
		}
	}
	var buf bytes.Buffer
	if err := codec.Encode(&buf, func() {}); err == nil {
		t.Errorf("Encode of a func: no error")
	}
}

// randomState returns n bytes of a fixed pseudo-random sequence.
func randomState(n int) []byte {
	b := make([]byte, n)
	x := uint32(n) | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}
