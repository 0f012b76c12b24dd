package checkpoint

import (
	"io"
	"sync"
)

// pipeWriter buffers what a streamed save writes and passes it on to its
// file in chunks. Once a stream has filled a first chunk, the chunks are
// written by a goroutine of the save's own, so that encoding the state (the
// stream's CPU) and writing it (the kernel's copy into the page cache)
// overlap on two CPUs instead of taking turns; a small state fits in one
// chunk and is written by Flush, with no goroutine. At most pipeChunks
// chunks exist, so a stream ahead of its file waits for a chunk to be
// written.
//
// A pipeWriter is used by one goroutine (the stream's). The first error of
// the file is returned by the Write after it is known and by Flush; Close
// ends the writer goroutine, if any, whatever happened, and must be called.
type pipeWriter struct {
	w       io.Writer
	buf     []byte      // the chunk being filled
	full    chan []byte // chunks to write, in order
	free    chan []byte // chunks written, to be filled again
	done    chan struct{}
	chunks  int // chunks made
	mu      sync.Mutex
	err     error // the file's first error, set by the writer goroutine
	started bool
	closed  bool
}

const (
	// pipeChunk is the size of a chunk: a write to the file each.
	pipeChunk = 256 << 10
	// pipeChunks bounds the chunks of a pipeWriter, which bounds the
	// memory a stream ahead of its file holds.
	pipeChunks = 4
)

// firstChunks keeps the first chunk of pipeWriters, the only one a small
// state needs.
var firstChunks = sync.Pool{New: func() any { return new([pipeChunk]byte) }}

// newPipeWriter returns a pipeWriter to w; Close releases it.
func newPipeWriter(w io.Writer) *pipeWriter {
	return &pipeWriter{w: w, buf: firstChunks.Get().(*[pipeChunk]byte)[:0], chunks: 1}
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	if err := p.fileErr(); err != nil {
		return 0, err
	}
	n := 0
	for len(b) > 0 {
		c := copy(p.buf[len(p.buf):cap(p.buf)], b)
		p.buf = p.buf[:len(p.buf)+c]
		b, n = b[c:], n+c
		if len(p.buf) == cap(p.buf) {
			p.pass()
		}
	}
	return n, nil
}

// pass hands the full chunk to the writer goroutine, starting it, and
// takes the next chunk to fill.
func (p *pipeWriter) pass() {
	if !p.started {
		p.started = true
		p.full = make(chan []byte, pipeChunks)
		p.free = make(chan []byte, pipeChunks)
		p.done = make(chan struct{})
		go p.writeChunks()
	}
	p.full <- p.buf
	select {
	case p.buf = <-p.free:
	default:
		if p.chunks < pipeChunks {
			p.chunks++
			p.buf = make([]byte, 0, pipeChunk)
		} else {
			p.buf = <-p.free
		}
	}
}

// writeChunks writes the chunks passed, in order, until full is closed;
// after an error it writes nothing more.
func (p *pipeWriter) writeChunks() {
	defer close(p.done)
	for b := range p.full {
		if p.fileErr() == nil {
			if _, err := p.w.Write(b); err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
			}
		}
		p.free <- b[:0]
	}
}

func (p *pipeWriter) fileErr() error {
	if !p.started {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Flush writes what is buffered and waits until everything written is in
// the file; it returns the file's first error. The writer is then closed.
func (p *pipeWriter) Flush() error {
	if !p.started {
		if len(p.buf) == 0 {
			return nil
		}
		_, err := p.w.Write(p.buf)
		p.buf = p.buf[:0]
		return err
	}
	if len(p.buf) > 0 {
		p.full <- p.buf
		p.buf = nil
	}
	p.Close()
	return p.err // the writer goroutine has ended
}

// Close ends the writer goroutine, if any, without writing what is
// buffered, and releases the first chunk. It may be called more than once.
func (p *pipeWriter) Close() {
	if p.closed {
		return
	}
	p.closed = true
	if p.started {
		close(p.full)
		<-p.done
		return // the chunks are left to the garbage collector
	}
	if cap(p.buf) == pipeChunk {
		firstChunks.Put((*[pipeChunk]byte)(p.buf[:pipeChunk]))
	}
	p.buf = nil
}
