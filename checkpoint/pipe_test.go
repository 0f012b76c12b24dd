package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
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

// blockedFile is a file whose writes wait until release is closed.
type blockedFile struct {
	release chan struct{}
	bytes.Buffer
}

func (f *blockedFile) Write(p []byte) (int, error) {
	<-f.release
	return f.Buffer.Write(p)
}

// TestPipeWriterRunsAhead: while the file is busy with the first chunk,
// the stream goes on filling the other chunks, up to pipeChunks (the
// overlap of encoding and writing); it does not wait for each chunk to be
// written (the mutation `p.chunks >= pipeChunks` made a single chunk).
// Nothing here depends on timing: with the file held, writing three chunks
// must return; the time-out only turns a hang into a failure.
func TestPipeWriterRunsAhead(t *testing.T) {
	f := &blockedFile{release: make(chan struct{})}
	p := newPipeWriter(f)
	data := make([]byte, 3*pipeChunk)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		p.Write(data)
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Error("writing 3 chunks waited for the file: the stream does not run ahead")
	}
	close(f.release)
	<-wrote
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	if f.Len() != len(data) {
		t.Errorf("%d bytes written, want %d", f.Len(), len(data))
	}
}

// TestPipeWriterWholeChunks: the file gets one write per chunk, each of
// pipeChunk bytes but the last, and no empty write, whether the data ends
// on a chunk's boundary or not, with or without the writer goroutine.
func TestPipeWriterWholeChunks(t *testing.T) {
	for _, size := range []int{1, pipeChunk - 1, pipeChunk, pipeChunk + 1, 2 * pipeChunk, 5*pipeChunk + 3} {
		var f chunkLog
		p := newPipeWriter(&f)
		p.Write(make([]byte, size))
		if err := p.Flush(); err != nil {
			t.Fatal(err)
		}
		p.Close()
		var want []int
		for rest := size; rest > 0; rest -= pipeChunk {
			want = append(want, min(rest, pipeChunk))
		}
		if !slices.Equal(f.sizes, want) {
			t.Errorf("%d bytes: writes of %v, want %v", size, f.sizes, want)
		}
	}
}

// chunkLog records the size of each write.
type chunkLog struct{ sizes []int }

func (f *chunkLog) Write(p []byte) (int, error) {
	f.sizes = append(f.sizes, len(p))
	return len(p), nil
}

// TestPipeWriterReusesFirstChunk: a small state's pipeWriter takes its one
// chunk from those of earlier writers, so that a small streamed save does
// not allocate a chunk (256 KiB) each time.
func TestPipeWriterReusesFirstChunk(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	small := make([]byte, 100)
	write := func() {
		p := newPipeWriter(io.Discard)
		p.Write(small)
		p.Flush()
		p.Close()
	}
	write()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		write()
	}
	runtime.ReadMemStats(&after)
	// A chunk put back on one P is not found from another, and a GC
	// empties the pool: a few chunks may still be made, not one a save.
	if n := after.TotalAlloc - before.TotalAlloc; n >= 10*pipeChunk {
		t.Errorf("100 small pipeWriters allocated %d bytes, want less than 10 chunks (%d)", n, 10*pipeChunk)
	}
}
