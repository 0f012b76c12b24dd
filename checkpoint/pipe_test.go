package checkpoint

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// slowFile records what is written to it, one write at a time, and fails
// from its failAt-th write on when failAt > 0.
type slowFile struct {
	bytes.Buffer
	writes, failAt int
}

var errDisk = errors.New("disk full")

func (f *slowFile) Write(p []byte) (int, error) {
	f.writes++
	if f.failAt > 0 && f.writes >= f.failAt {
		return 0, errDisk
	}
	return f.Buffer.Write(p)
}

// TestPipeWriter: what is written reaches the file whole and in order,
// whatever the sizes of the writes, with or without the writer goroutine;
// large writes pass through at most pipeChunks chunks.
func TestPipeWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, pipeChunk - 1, pipeChunk, pipeChunk + 1, 3*pipeChunk + 7, 20 * pipeChunk} {
		for _, maxWrite := range []int{1 << 10, pipeChunk, 5 * pipeChunk} {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			var f slowFile
			p := newPipeWriter(&f)
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(maxWrite))
				if m, err := p.Write(rest[:n]); m != n || err != nil {
					t.Fatalf("size %d: Write = %d, %v", size, m, err)
				}
				rest = rest[n:]
			}
			if err := p.Flush(); err != nil {
				t.Fatalf("size %d: Flush: %v", size, err)
			}
			p.Close()
			if !bytes.Equal(f.Bytes(), data) {
				t.Fatalf("size %d, writes up to %d: the file differs from what was written", size, maxWrite)
			}
			if p.chunks > pipeChunks {
				t.Errorf("size %d: %d chunks, at most %d", size, p.chunks, pipeChunks)
			}
			if started := size >= pipeChunk; p.started != started {
				t.Errorf("size %d: writer goroutine started %v, want %v", size, p.started, started)
			}
		}
	}
}

// TestPipeWriterFileError: the file's first error is returned by a later
// Write and by Flush, and nothing more is written after it; Close without
// Flush ends the writer goroutine (goleak checks it ended).
func TestPipeWriterFileError(t *testing.T) {
	f := &slowFile{failAt: 2}
	p := newPipeWriter(f)
	chunk := make([]byte, pipeChunk)
	var werr error
	for i := 0; i < 50 && werr == nil; i++ {
		_, werr = p.Write(chunk) // the error shows in a later Write, or in Flush
	}
	if err := p.Flush(); !errors.Is(err, errDisk) {
		t.Fatalf("Flush = %v, want the file's error", err)
	}
	if werr != nil && !errors.Is(werr, errDisk) {
		t.Errorf("Write = %v, want the file's error", werr)
	}
	if f.writes != 2 || f.Len() != pipeChunk {
		t.Errorf("%d writes, %d bytes written; want 2 writes, one chunk written", f.writes, f.Len())
	}

	p = newPipeWriter(&slowFile{})
	p.Write(make([]byte, 3*pipeChunk))
	p.Close() // no Flush: the stream failed
	p.Close()
}
