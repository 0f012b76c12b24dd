package checkpoint

// This file holds the streamed save: a checkpoint whose state is written by
// an io.WriterTo, encoded straight into the store, rather than handed over
// as a slice.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// errStateSet is returned by SaveFrom when the checkpoint already has a
// state: the state comes from the stream or from State, never both.
var errStateSet = errors.New("checkpoint: SaveFrom of a checkpoint with a State: the state comes from the stream")

// errNilStream is returned by SaveFrom when its stream is nil.
var errNilStream = errors.New("checkpoint: SaveFrom with a nil state stream")

// checkSave checks what every store's Save checks first: the context, c
// and its session, and its size.
func checkSave(ctx context.Context, c *Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c == nil {
		return ErrNilCheckpoint
	}
	if err := ValidateSession(c.Session); err != nil {
		return err
	}
	_, err := encodedSize(c, int64(len(c.State)))
	return err
}

// checkStream checks the arguments of a SaveFrom that Save does not have.
func checkStream(c *Checkpoint, state io.WriterTo) error {
	if state == nil {
		return errNilStream
	}
	if c != nil && len(c.State) != 0 {
		return errStateSet
	}
	return nil
}

// stateWriter is the writer a state stream writes to: it counts the bytes
// and checksums them on their way to w, and refuses a write that would take
// the checkpoint above maxEncoded before any of it reaches w. Its first
// error is kept and returned by every later write, so that a stream that
// ignores an error (a codec that drops it) still fails the save.
type stateWriter struct {
	w       io.Writer
	session string
	room    int64  // the most bytes the state may have
	n       int64  // bytes written
	crc     uint32 // CRC-32C of the bytes written
	err     error
}

func (s *stateWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if int64(len(p)) > s.room-s.n {
		s.err = &streamSizeError{session: s.session, room: s.room}
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.crc = crc32.Update(s.crc, castagnoli, p[:n])
	s.n += int64(n)
	if err != nil {
		s.err = err
	}
	return n, err
}

// streamSizeError refuses a state stream that takes its checkpoint above
// the size limit.
type streamSizeError struct {
	session string
	room    int64 // the most bytes the state could have
}

func (e *streamSizeError) Error() string {
	return fmt.Sprintf("checkpoint: session %s: the state streamed goes beyond %d bytes, which puts the checkpoint above the limit of 1 GiB",
		quoteSession(e.session), e.room)
}

// newStateWriter returns the stateWriter of c's state, written to w.
func newStateWriter(w io.Writer, c *Checkpoint) *stateWriter {
	sw := stateWriterOf(w, c)
	return &sw
}

// stateWriterOf returns the stateWriter of c's state, written to w.
func stateWriterOf(w io.Writer, c *Checkpoint) stateWriter {
	fixed, _ := encodedSize(c, 0) // checked by the caller
	return stateWriter{w: w, session: c.Session, room: maxEncoded - fixed}
}

// stream runs state.WriteTo(sw) and returns the first error of the stream
// or of its writer; the writer's wins, since a stream may wrap it or drop
// it.
func stream(state io.WriterTo, sw *stateWriter) error {
	_, err := state.WriteTo(sw)
	if sw.err != nil {
		return sw.err
	}
	return err
}

// streamedState is what a streamed save wrote of its state.
type streamedState struct {
	n   int64  // its length
	crc uint32 // its CRC-32C
}

// writeStream writes c in the checkpoint format to f, at its start,
// recording gen as its generation, with the state written by state. The
// header and the record are written first, with a state length of 0, then
// the state, checksummed on the way, and the checksum of the whole; the
// state's length is written last, into the header, in place. The CRC-32C
// of the whole is that of the header and record as finally written,
// combined with that of the state (crc32Combine): nothing is read back.
// The file is written through a pipeWriter, so that a large state is
// encoded and written at once.
func writeStream(f *os.File, c *Checkpoint, gen uint64, state io.WriterTo) (streamedState, error) {
	buf := getBuf()
	defer putBuf(buf)
	if _, err := encodeHead(buf, c, gen, 0); err != nil {
		return streamedState{}, err
	}
	pw := newPipeWriter(f)
	defer pw.Close()      // also when the stream fails or panics
	pw.Write(buf.Bytes()) // buffered: a chunk is not full yet
	sw := newStateWriter(pw, c)
	if err := stream(state, sw); err != nil {
		return streamedState{}, err
	}
	st := streamedState{n: sw.n, crc: sw.crc}
	buf.Reset()
	head, err := st.head(buf, c, gen)
	if err != nil {
		return streamedState{}, err
	}
	pw.Write(st.trailer(head)) // an error of the file is returned by Flush too
	if err := pw.Flush(); err != nil {
		return streamedState{}, err
	}
	if _, err := f.WriteAt(head[12:headerSize], 12); err != nil {
		return streamedState{}, err
	}
	return st, nil
}

// head encodes the header and record of c into buf, with gen as its
// generation and the state's length, and returns them.
func (st streamedState) head(buf *bytes.Buffer, c *Checkpoint, gen uint64) ([]byte, error) {
	if _, err := encodeHead(buf, c, gen, st.n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// trailer returns the checksum of a checkpoint of header and record head
// and this state.
func (st streamedState) trailer(head []byte) []byte {
	crc := crc32Combine(crc32.Checksum(head, castagnoli), st.crc, st.n)
	return binary.LittleEndian.AppendUint32(nil, crc)
}

// regenerate rewrites, in the file f written by writeStream, the generation
// recorded and the checksum, in place: a state stream cannot be run again.
func (st streamedState) regenerate(f *os.File, c *Checkpoint, gen uint64) error {
	buf := getBuf()
	defer putBuf(buf)
	head, err := st.head(buf, c, gen)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(head[headerSize:headerSize+8], headerSize); err != nil {
		return err
	}
	_, err = f.WriteAt(st.trailer(head), int64(len(head))+st.n)
	return err
}

// crc32Combine returns the CRC-32C of the concatenation of a and b, given
// crcA, the CRC-32C of a, and crcB and lenB, the CRC-32C and length of b.
//
// It is the method of zlib's crc32_combine (Mark Adler): appending lenB
// zero bits to a message multiplies its CRC register by a 32×32 matrix
// over GF(2); the matrix for lenB bytes is built by repeated squaring of
// the matrix of one zero bit, so the cost is O(log lenB) matrix products,
// whatever the size. The CRC of a followed by lenB zero bytes, xored with
// crcB, is the CRC of a followed by b (the pre- and post-conditioning of
// the CRC cancel out in the xor).
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	return crcCombine(crc32.Castagnoli, crcA, crcB, lenB)
}

// crcCombine is crc32Combine for any reversed polynomial poly (as in
// hash/crc32), so that it can be tested with IEEE too.
func crcCombine(poly, crcA, crcB uint32, lenB int64) uint32 {
	// op is the operator of one zero bit: the register shifted right, the
	// polynomial xored in when the bit shifted out is set.
	var op, sq gf2Matrix
	op[0] = poly
	for i := 1; i < 32; i++ {
		op[i] = 1 << (i - 1)
	}
	// Squared three times, of one zero byte; then, squared at every bit of
	// lenB, of 2^k zero bytes, applied where lenB has bit k.
	for range 3 {
		sq.square(&op)
		op = sq
	}
	for ; lenB > 0; lenB >>= 1 {
		if lenB&1 != 0 {
			crcA = op.times(crcA)
		}
		sq.square(&op)
		op = sq
	}
	return crcA ^ crcB
}

// gf2Matrix is a 32×32 matrix over GF(2), one column per element.
type gf2Matrix [32]uint32

// times returns m times the vector v.
func (m *gf2Matrix) times(v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

// square sets m to a times a.
func (m *gf2Matrix) square(a *gf2Matrix) {
	for i := range m {
		m[i] = a.times(a[i])
	}
}
