package xcmd

import "sync"

// DefaultTailSize is the bound of a [Tail] whose Max is 0.
const DefaultTailSize = 1 << 20

// Tail is an io.Writer that keeps the last Max bytes written to it (the
// tail of a command's output, where its report or its last error is) and
// counts the bytes it dropped. Its zero value keeps [DefaultTailSize]
// bytes. It is safe for concurrent use (a command's stdout and stderr may
// share it); Max must not change after the first Write.
type Tail struct {
	// Max is the number of bytes kept; 0 means DefaultTailSize.
	Max int

	mu      sync.Mutex
	buf     []byte // the kept bytes are its last max() bytes
	written int64
}

func (t *Tail) max() int {
	if t.Max > 0 {
		return t.Max
	}
	return DefaultTailSize
}

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, max := len(p), t.max()
	t.written += int64(n)
	if len(p) > max {
		p = p[len(p)-max:]
	}
	// The buffer grows to twice the bound at most: then the bytes that
	// will stay are moved to its start, once per max bytes written.
	if len(t.buf)+len(p) > 2*max {
		keep := max - len(p)
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Bytes returns a copy of the kept bytes: the last Max bytes written, or
// all of them. The first bytes may be the end of a cut UTF-8 sequence.
func (t *Tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.kept()...)
}

// String returns the kept bytes as a string.
func (t *Tail) String() string { return string(t.Bytes()) }

// Cut returns the number of bytes written but not kept: 0 when Bytes
// holds the whole output.
func (t *Tail) Cut() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written - int64(len(t.kept()))
}

func (t *Tail) kept() []byte {
	if max := t.max(); len(t.buf) > max {
		return t.buf[len(t.buf)-max:]
	}
	return t.buf
}
