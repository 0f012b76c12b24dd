package checkpoint

import (
	"bytes"
	"strings"
	"testing"
)

// TestSizeLimitIsExact: a checkpoint that encodes to exactly 1 GiB is
// accepted, one byte more is refused, with the size in the error; checked
// on the size computation every save goes through (checkSave,
// stateWriterOf), since a 1 GiB state is too much for a test. The base
// size is Marshal's length of the checkpoint without a state.
func TestSizeLimitIsExact(t *testing.T) {
	for _, c := range []*Checkpoint{
		{Session: "s", Status: "done", Engine: []byte("engine")},
		{Session: "s", BestGeneration: 1, Origin: Origin{Session: "o", Generation: 2}},
	} {
		b, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		base := int64(len(b))
		for _, tc := range []struct {
			state int64
			ok    bool
		}{
			{maxEncoded - base - 1, true},
			{maxEncoded - base, true},
			{maxEncoded - base + 1, false},
		} {
			n, err := encodedSize(c, tc.state)
			if n != base+tc.state {
				t.Errorf("encodedSize with a state of %d bytes: %d, want %d", tc.state, n, base+tc.state)
			}
			switch {
			case tc.ok && err != nil:
				t.Errorf("%d bytes in all: %v, want no error", n, err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), "above the limit of 1 GiB")):
				t.Errorf("%d bytes in all: %v, want above the limit", n, err)
			}
		}
		if sw := stateWriterOf(nil, c); sw.room != maxEncoded-base {
			t.Errorf("a streamed state may have %d bytes, want %d", sw.room, maxEncoded-base)
		}
	}
}

// countingWriter counts its Write calls and keeps what they write.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestWriteToSmallCheckpointAtOnce: a save writes a checkpoint whose state
// is at most inlineState bytes with a single write call, and a larger one
// (the state written from the caller's slice, not copied) with more; the
// bytes are Marshal's either way.
func TestWriteToSmallCheckpointAtOnce(t *testing.T) {
	for _, tc := range []struct {
		state  int
		writes int
	}{
		{0, 1},
		{100, 1},
		{inlineState, 1},
		{inlineState + 1, 3},
	} {
		c := &Checkpoint{Session: "s", Generation: 4, Engine: []byte("engine"), State: bytes.Repeat([]byte{7}, tc.state)}
		var w countingWriter
		if err := c.writeTo(&w, 4); err != nil {
			t.Fatal(err)
		}
		want, err := Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), want) {
			t.Errorf("state of %d bytes: writeTo wrote other bytes than Marshal", tc.state)
		}
		if w.writes != tc.writes {
			t.Errorf("state of %d bytes: %d write calls, want %d", tc.state, w.writes, tc.writes)
		}
	}
}
