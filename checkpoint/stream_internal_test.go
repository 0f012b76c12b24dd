package checkpoint

import (
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
)

// TestCRC32Combine: combining the CRCs of two parts gives the CRC of the
// whole, for both the Castagnoli polynomial and IEEE's, over random data
// split at random points, the empty parts and long parts included.
func TestCRC32Combine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<16+17)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	splits := []int{0, 1, 2, 3, 4, 7, 8, 31, 32, 33, 255, 256, 4096, len(data) - 1, len(data)}
	for range 200 {
		splits = append(splits, rng.IntN(len(data)+1))
	}
	for _, poly := range []uint32{crc32.Castagnoli, crc32.IEEE} {
		tab := crc32.MakeTable(poly)
		for _, n := range []int{0, 1, 5, 100, len(data)} {
			whole := data[:n]
			want := crc32.Checksum(whole, tab)
			for _, s := range splits {
				if s > n {
					continue
				}
				a, b := whole[:s], whole[s:]
				got := crcCombine(poly, crc32.Checksum(a, tab), crc32.Checksum(b, tab), int64(len(b)))
				if got != want {
					t.Fatalf("poly %#x, %d bytes split at %d: combined %#08x, want %#08x", poly, n, s, got, want)
				}
			}
		}
	}
}

// TestCRC32CombineLarge: a part of many zero bytes, whose CRC hash/crc32
// computes in a loop, and the Castagnoli helper the stores use.
func TestCRC32CombineLarge(t *testing.T) {
	head := []byte("RFCK header and record")
	zeros := make([]byte, 3<<20+5)
	want := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, zeros)
	got := crc32Combine(crc32.Checksum(head, castagnoli), crc32.Checksum(zeros, castagnoli), int64(len(zeros)))
	if got != want {
		t.Errorf("combined %#08x, want %#08x", got, want)
	}
}

func FuzzCRC32Combine(f *testing.F) {
	f.Add([]byte(""), []byte(""))
	f.Add([]byte("a"), []byte(""))
	f.Add([]byte(""), []byte("b"))
	f.Add([]byte("RFCK\x02\x00\x00\x00"), []byte("state bytes"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		whole := append(append([]byte(nil), a...), b...)
		want := crc32.Checksum(whole, castagnoli)
		if got := crc32Combine(crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), int64(len(b))); got != want {
			t.Errorf("combined %#08x, want %#08x", got, want)
		}
	})
}

// failingWriter fails every write after its first ok ones.
type failingWriter struct {
	ok     int
	writes int
}

var errFile = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > w.ok {
		return 0, errFile
	}
	return len(p), nil
}

// ignoring is a state stream that writes its pieces and ignores the
// writer's errors, as a codec that drops them would.
type ignoring [][]byte

func (s ignoring) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, p := range s {
		m, _ := w.Write(p)
		n += int64(m)
	}
	return n, nil
}

// TestStateWriterKeepsFirstError: the stream's writer keeps its file's
// first error and returns it from every later write, so a stream that
// ignores the error still fails the save with it; and a write that fits
// the room exactly is accepted, one byte more refused before it reaches
// the file.
func TestStateWriterKeepsFirstError(t *testing.T) {
	t.Run("file_error", func(t *testing.T) {
		w := &failingWriter{ok: 1}
		sw := stateWriter{w: w, session: "s", room: 100}
		err := stream(ignoring{[]byte("ab"), []byte("cd"), []byte("ef")}, &sw)
		if !errors.Is(err, errFile) {
			t.Errorf("stream that ignores its writer's errors: %v, want the file's error", err)
		}
		if w.writes != 2 {
			t.Errorf("%d writes reached the file, want 2 (none after its error)", w.writes)
		}
	})
	t.Run("room", func(t *testing.T) {
		for _, tc := range []struct {
			pieces []int
			fits   bool
		}{
			{[]int{4, 6}, true},
			{[]int{10}, true},
			{[]int{4, 7}, false},
			{[]int{11}, false},
		} {
			var s ignoring
			for _, n := range tc.pieces {
				s = append(s, make([]byte, n))
			}
			var w failingWriter
			w.ok = 100
			sw := stateWriter{w: &w, session: "s", room: 10}
			err := stream(s, &sw)
			var se *streamSizeError
			switch {
			case tc.fits && err != nil:
				t.Errorf("pieces %v in a room of 10: %v, want no error", tc.pieces, err)
			case !tc.fits && !errors.As(err, &se):
				t.Errorf("pieces %v in a room of 10: %v, want a size error", tc.pieces, err)
			case !tc.fits && w.writes != len(tc.pieces)-1:
				t.Errorf("pieces %v in a room of 10: %d writes reached the file, want %d", tc.pieces, w.writes, len(tc.pieces)-1)
			}
		}
	})
}
