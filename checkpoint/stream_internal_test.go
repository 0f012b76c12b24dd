package checkpoint

import (
	"hash/crc32"
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
