package xcmd_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/examples/internal/xcmd"
)

// output returns n bytes of numbered lines, so that a wrong cut shows.
func output(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.Bytes()[:n]
}

func TestTail(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		name   string
		max    int
		total  int
		chunks int // bytes per Write
	}{
		{"5MB_in_4KiB_writes_keeps_last_MiB", 0, 5 * mb, 4096},
		{"5MB_in_one_write", mb, 5 * mb, 5 * mb},
		{"odd_chunks_across_compactions", 1000, 12345, 333},
		{"short_output_kept_whole", 1000, 999, 100},
		{"exactly_max", 1000, 1000, 7},
		{"empty", 10, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := output(tt.total)
			tail := &xcmd.Tail{Max: tt.max}
			for rest := data; len(rest) > 0; {
				n := min(tt.chunks, len(rest))
				if got, err := tail.Write(rest[:n]); got != n || err != nil {
					t.Fatalf("Write = %d, %v; want %d, nil", got, err, n)
				}
				rest = rest[n:]
			}
			keep := tt.max
			if keep == 0 {
				keep = xcmd.DefaultTailSize
			}
			want := data[max(0, len(data)-keep):]
			if !bytes.Equal(want, tail.Bytes()) {
				t.Errorf("Bytes: %d bytes ending %q, want %d bytes ending %q",
					len(tail.Bytes()), end(tail.Bytes()), len(want), end(want))
			}
			if diff := cmp.Diff(string(want), tail.String()); diff != "" && len(want) < 2000 {
				t.Errorf("String (-want +got):\n%s", diff)
			}
			if got, want := tail.Cut(), int64(len(data)-len(want)); got != want {
				t.Errorf("Cut = %d, want %d", got, want)
			}
		})
	}
}

func end(b []byte) []byte { return b[max(0, len(b)-20):] }

// TestTailBytesIsACopy: what Bytes returns does not change with later
// writes.
func TestTailBytesIsACopy(t *testing.T) {
	tail := &xcmd.Tail{Max: 4}
	tail.Write([]byte("abcd"))
	got := tail.Bytes()
	tail.Write([]byte("efghijkl"))
	if string(got) != "abcd" || tail.String() != "ijkl" || tail.Cut() != 8 {
		t.Errorf("got %q, then %q cut %d; want abcd, then ijkl cut 8", got, tail.String(), tail.Cut())
	}
}
