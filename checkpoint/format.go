package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// The checkpoint format. Every version shares the same envelope, so that a
// damaged record is always told apart from a record of another version:
//
//	offset  size  field
//	0       4     magic "RFCK"
//	4       4     format version, little endian
//	8       4     length M of the record, little endian
//	12      8     length S of the state, little endian
//	20      M     the record: the Checkpoint without State and Notes, as JSON
//	20+M    S     the state bytes, as given
//	20+M+S  4     CRC-32C (Castagnoli) of bytes [0, 20+M+S), little endian
//
// The checksum is verified before the version is looked at: a flipped bit in
// the version field is damage (*CorruptError), and only an intact record of
// another version gives a *VersionError.
const (
	magic      = "RFCK"
	headerSize = 20
	crcSize    = 4
	// inlineState is the largest state copied into the header buffer so
	// that a small checkpoint is written with a single write call; larger
	// states are written directly from the caller's slice, never copied.
	inlineState = 64 << 10
	// maxPooled bounds the buffers kept in bufPool.
	maxPooled = 256 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Reasons for a *CorruptError, in its Err field.
var (
	errTruncated = errors.New("truncated")
	errMagic     = errors.New("bad magic number, not a checkpoint")
	errTrailing  = errors.New("trailing data after the checksum")
	errChecksum  = errors.New("checksum mismatch")
)

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		bufPool.Put(b)
	}
}

// encodeHead writes the header and the record of c into buf, with the
// record's Version set to [Version] and its Generation to gen (c itself is
// not modified), and returns the CRC-32C of what it wrote.
func encodeHead(buf *bytes.Buffer, c *Checkpoint, gen uint64) (uint32, error) {
	rec := *c // shallow: only the Generation differs
	rec.Generation = gen
	var hdr [headerSize]byte
	buf.Write(hdr[:])
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&rec); err != nil {
		return 0, fmt.Errorf("checkpoint: encoding the record of session %q: %w", c.Session, err)
	}
	b := buf.Bytes()
	copy(b[0:4], magic)
	binary.LittleEndian.PutUint32(b[4:8], Version)
	binary.LittleEndian.PutUint32(b[8:12], uint32(len(b)-headerSize))
	binary.LittleEndian.PutUint64(b[12:20], uint64(len(c.State)))
	return crc32.Update(0, castagnoli, b), nil
}

// writeTo writes c in the checkpoint format to w, recording gen as its
// generation. The state is written straight from c.State, never copied,
// unless it is small enough to share one write with the header.
func (c *Checkpoint) writeTo(w io.Writer, gen uint64) error {
	buf := getBuf()
	defer putBuf(buf)
	crc, err := encodeHead(buf, c, gen)
	if err != nil {
		return err
	}
	var sum [crcSize]byte
	if len(c.State) <= inlineState {
		crc = crc32.Update(crc, castagnoli, c.State)
		binary.LittleEndian.PutUint32(sum[:], crc)
		buf.Write(c.State)
		buf.Write(sum[:])
		_, err = w.Write(buf.Bytes())
		return err
	}
	// A large state is checksummed while it is being written: the write
	// (a copy into the page cache) and the CRC overlap on two CPUs.
	crcc := make(chan uint32, 1)
	go func() { crcc <- crc32.Update(crc, castagnoli, c.State) }()
	_, err = w.Write(buf.Bytes())
	if err == nil {
		_, err = w.Write(c.State)
	}
	crc = <-crcc // always wait: the goroutine reads c.State
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(sum[:], crc)
	_, err = w.Write(sum[:])
	return err
}

// Marshal encodes c in the checkpoint format: a header, the record as JSON,
// the state bytes, and a CRC-32C checksum over all of it. The encoded
// Version is always [Version]; c is not modified. A nil c gives
// ErrNilCheckpoint; a record JSON cannot encode (a NaN score, say) gives an
// error wrapping the encoder's.
func Marshal(c *Checkpoint) ([]byte, error) {
	if c == nil {
		return nil, ErrNilCheckpoint
	}
	buf := getBuf()
	defer putBuf(buf)
	crc, err := encodeHead(buf, c, c.Generation)
	if err != nil {
		return nil, err
	}
	crc = crc32.Update(crc, castagnoli, c.State)
	out := make([]byte, 0, buf.Len()+len(c.State)+crcSize)
	out = append(out, buf.Bytes()...)
	out = append(out, c.State...)
	out = binary.LittleEndian.AppendUint32(out, crc)
	return out, nil
}

// Unmarshal decodes data written by [Marshal]. A truncated or damaged record
// gives a *CorruptError, an unknown version a *VersionError. It never panics,
// whatever data holds, and the result does not share memory with data.
func Unmarshal(data []byte) (*Checkpoint, error) {
	return unmarshal(data, true)
}

// unmarshal is Unmarshal; with copyState false the result's State aliases
// data, which the caller then must not reuse.
func unmarshal(data []byte, copyState bool) (*Checkpoint, error) {
	if len(data) < len(magic) {
		return nil, &CorruptError{Err: errTruncated}
	}
	if string(data[:len(magic)]) != magic {
		return nil, &CorruptError{Err: errMagic}
	}
	if len(data) < headerSize+crcSize {
		return nil, &CorruptError{Err: errTruncated}
	}
	version := binary.LittleEndian.Uint32(data[4:8])
	metaLen := uint64(binary.LittleEndian.Uint32(data[8:12]))
	stateLen := binary.LittleEndian.Uint64(data[12:20])
	avail := uint64(len(data) - headerSize - crcSize)
	if metaLen > avail || stateLen > avail-metaLen {
		return nil, &CorruptError{Err: errTruncated}
	}
	if metaLen+stateLen != avail {
		return nil, &CorruptError{Err: errTrailing}
	}
	end := headerSize + int(metaLen) + int(stateLen)
	if crc32.Checksum(data[:end], castagnoli) != binary.LittleEndian.Uint32(data[end:]) {
		return nil, &CorruptError{Err: errChecksum}
	}
	if version != Version {
		return nil, &VersionError{Version: int(version)}
	}
	c := new(Checkpoint)
	if err := json.Unmarshal(data[headerSize:headerSize+int(metaLen)], c); err != nil {
		return nil, &CorruptError{Err: fmt.Errorf("unreadable record: %w", err)}
	}
	if stateLen > 0 {
		state := data[headerSize+int(metaLen) : end : end]
		if copyState {
			state = bytes.Clone(state)
		}
		c.State = state
	}
	return c, nil
}
