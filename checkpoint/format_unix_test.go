//go:build unix

package checkpoint

import (
	"encoding/binary"
	"hash/crc32"
	"syscall"
	"testing"
)

// TestUnmarshalOfExactly1GiB: an encoding of exactly 1 GiB, the largest a
// store writes (TestSizeLimitIsExact), is read back (a bound of `>=`
// refused it). The state is not copied (unmarshal without copyBytes, as a
// Dir's load), and the gigabyte is zeros the test does not write, so it
// costs two checksums of 1 GiB and no memory.
func TestUnmarshalOfExactly1GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 1 GiB")
	}
	c := &Checkpoint{Session: "s", Generation: 9, Engine: []byte("engine")}
	head, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	head = head[:len(head)-crcSize]
	state := maxEncoded - len(head) - crcSize
	// Mapped rather than allocated: pages never written stay the kernel's
	// zero page, so the gigabyte costs no memory.
	data, err := syscall.Mmap(-1, 0, maxEncoded, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mapping 1 GiB: %v", err)
	}
	defer syscall.Munmap(data)
	copy(data, head)
	binary.LittleEndian.PutUint64(data[12:20], uint64(state))
	binary.LittleEndian.PutUint32(data[maxEncoded-crcSize:], crc32.Checksum(data[:maxEncoded-crcSize], castagnoli))
	got, err := unmarshal(data, false)
	if err != nil {
		t.Fatalf("unmarshal of 1 GiB: %v", err)
	}
	if got.Generation != 9 || len(got.State) != state {
		t.Errorf("unmarshal of 1 GiB: generation %d, state of %d bytes; want 9, %d", got.Generation, len(got.State), state)
	}
}
