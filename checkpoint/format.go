package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
	"time"
)

// The checkpoint format. Every version shares the same frame, so that a
// damaged record is always told apart from a record of another version:
//
//	offset  size  field
//	0       4     magic "RFCK"
//	4       4     format version, little endian
//	8       4     length M of the record, little endian
//	12      8     length S of the state, little endian
//	20      M     the record (below)
//	20+M    S     the state bytes, as given
//	20+M+S  4     CRC-32C (Castagnoli) of bytes [0, 20+M+S), little endian
//
// The checksum is verified before the version is looked at: a flipped bit in
// the version field is damage (*CorruptError), and only an intact record of
// another version gives a *VersionError. The lengths are checked against
// the size of the data (or file) before anything else is read, and a total
// above maxEncoded is damage: a reader never allocates what a header claims
// without the bytes being there.
//
// The record of version 2, all integers little endian:
//
//	0    8  Generation
//	8    8  Token
//	16   8  Iteration (signed)
//	24   8  Time: seconds since 1970-01-01 UTC (signed)
//	32   4  Time: nanoseconds, below 1e9
//	36      Session, Status, Reason, Question, Fingerprint and Engine,
//	        each as a 4-byte length and that many bytes
//
// and nothing after them. Version 3 adds the fields of a kept best state and
// of a fork:
//
//	36   8  BestGeneration
//	44   8  Origin.Generation
//	52      Session, Status, Reason, Question, Fingerprint, Origin.Session
//	        and Engine, each as a 4-byte length and that many bytes
//
// A checkpoint is written in version 2 unless it has one of these fields
// set, so that a store's files stay readable by the releases before
// version 3 for as long as the loops saving them use neither keep-best nor
// forks; a version-3 record without them is malformed, so that every
// checkpoint has one encoding. Version 1 framed a JSON record of 23 fields;
// it is recognised, by its version, and refused.
const (
	magic       = "RFCK"
	headerSize  = 20
	crcSize     = 4
	recordFixed = 36 // of version 2; version 3 has recordFixed3
	// recordFixed3 is the size of the fixed fields of a version-3 record.
	recordFixed3 = 52
	// version2 is the version written for a checkpoint without the fields
	// of Version.
	version2 = 2
	// maxEncoded bounds the size of an encoded checkpoint.
	maxEncoded = 1 << 30
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
	errTooLarge  = errors.New("lengths beyond the 1 GiB limit")
	errRecord    = errors.New("malformed record")
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

// strings of the record, in order: the first five in version 2, all six in
// version 3.
func recordStrings(c *Checkpoint) [6]string {
	return [6]string{c.Session, c.Status, c.Reason, c.Question, c.Fingerprint, c.Origin.Session}
}

// formatVersion returns the version c is written in: 2 unless it has a
// field of version 3.
func (c *Checkpoint) formatVersion() uint32 {
	if c.BestGeneration != 0 || c.Origin != (Origin{}) {
		return Version
	}
	return version2
}

// known reports whether this package reads records of version v.
func known(v uint32) bool { return v == Version || v == version2 }

// layout returns the size of the fixed fields and the number of strings of
// a record of version v (2 or 3).
func layout(v uint32) (fixed, strs int) {
	if v == version2 {
		return recordFixed, 5
	}
	return recordFixed3, 6
}

// encodedSize returns the size of c encoded with a state of stateLen bytes,
// or an error if it is above maxEncoded. Stores call it before saving, so
// that what one store accepts every store accepts.
func encodedSize(c *Checkpoint, stateLen int64) (int64, error) {
	fixed, strs := layout(c.formatVersion())
	n := int64(headerSize + fixed + crcSize + (strs+1)*4)
	ss := recordStrings(c)
	for _, s := range ss[:strs] {
		n += int64(len(s))
	}
	n += int64(len(c.Engine)) + stateLen
	if n > maxEncoded {
		return n, fmt.Errorf("checkpoint: session %s encodes to %d bytes, above the limit of 1 GiB", quoteSession(c.Session), n)
	}
	return n, nil
}

// encodeHead writes the header and the record of c into buf, recording gen
// as its generation and stateLen as the length of its state (c itself is
// not modified), and returns the CRC-32C of what it wrote.
func encodeHead(buf *bytes.Buffer, c *Checkpoint, gen uint64, stateLen int64) (uint32, error) {
	if _, err := encodedSize(c, stateLen); err != nil {
		return 0, err
	}
	version := c.formatVersion()
	fixedLen, strs := layout(version)
	var fixed [headerSize + recordFixed3]byte
	buf.Write(fixed[:headerSize+fixedLen])
	ss := recordStrings(c)
	for _, s := range ss[:strs] {
		buf.Write(binary.LittleEndian.AppendUint32(fixed[:0], uint32(len(s))))
		buf.WriteString(s)
	}
	buf.Write(binary.LittleEndian.AppendUint32(fixed[:0], uint32(len(c.Engine))))
	buf.Write(c.Engine)

	b := buf.Bytes()
	copy(b[0:4], magic)
	le := binary.LittleEndian
	le.PutUint32(b[4:8], version)
	le.PutUint32(b[8:12], uint32(len(b)-headerSize))
	le.PutUint64(b[12:20], uint64(stateLen))
	r := b[headerSize:]
	le.PutUint64(r[0:8], gen)
	le.PutUint64(r[8:16], c.Token)
	le.PutUint64(r[16:24], uint64(int64(c.Iteration)))
	le.PutUint64(r[24:32], uint64(c.Time.Unix()))
	le.PutUint32(r[32:36], uint32(c.Time.Nanosecond()))
	if version != version2 {
		le.PutUint64(r[36:44], c.BestGeneration)
		le.PutUint64(r[44:52], c.Origin.Generation)
	}
	return crc32.Update(0, castagnoli, b), nil
}

// writeTo writes c in the checkpoint format to w, recording gen as its
// generation. The state is written straight from c.State, never copied,
// unless it is small enough to share one write with the header.
func (c *Checkpoint) writeTo(w io.Writer, gen uint64) error {
	buf := getBuf()
	defer putBuf(buf)
	crc, err := encodeHead(buf, c, gen, int64(len(c.State)))
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

// Marshal encodes c in the checkpoint format: a header, the record, the
// state bytes, and a CRC-32C checksum over all of it, in format [Version].
// Skipped is not encoded; c is not modified. A nil c gives ErrNilCheckpoint,
// a checkpoint that would encode to more than 1 GiB an error.
func Marshal(c *Checkpoint) ([]byte, error) {
	if c == nil {
		return nil, ErrNilCheckpoint
	}
	buf := getBuf()
	defer putBuf(buf)
	crc, err := encodeHead(buf, c, c.Generation, int64(len(c.State)))
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
// gives a *CorruptError, an intact record of another format version a
// *VersionError. It never panics, whatever data holds, and the result does
// not share memory with data. The Time is in UTC.
func Unmarshal(data []byte) (*Checkpoint, error) {
	return unmarshal(data, true)
}

// checkFrame checks the header of an encoding of size bytes (hdr holds at
// least its first headerSize bytes, or all of it if shorter) and returns its
// version and the lengths of its record and state. Only the header is read:
// a file can be checked before it is read whole.
func checkFrame(hdr []byte, size int64) (version uint32, recLen, stateLen int, err error) {
	if size < int64(len(magic)) {
		return 0, 0, 0, &CorruptError{Err: errTruncated}
	}
	if string(hdr[:len(magic)]) != magic {
		return 0, 0, 0, &CorruptError{Err: errMagic}
	}
	if size < headerSize+crcSize {
		return 0, 0, 0, &CorruptError{Err: errTruncated}
	}
	version = binary.LittleEndian.Uint32(hdr[4:8])
	m := uint64(binary.LittleEndian.Uint32(hdr[8:12]))
	s := binary.LittleEndian.Uint64(hdr[12:20])
	if s > maxEncoded || headerSize+m+s+crcSize > maxEncoded {
		return 0, 0, 0, &CorruptError{Err: errTooLarge}
	}
	switch total := int64(headerSize + m + s + crcSize); {
	case total > size:
		return 0, 0, 0, &CorruptError{Err: errTruncated}
	case total < size:
		return 0, 0, 0, &CorruptError{Err: errTrailing}
	}
	return version, int(m), int(s), nil
}

// unmarshal is Unmarshal; with copyBytes false the result's Engine and State
// alias data, which the caller then must not reuse.
func unmarshal(data []byte, copyBytes bool) (*Checkpoint, error) {
	if int64(len(data)) > maxEncoded {
		return nil, &CorruptError{Err: errTooLarge}
	}
	version, recLen, stateLen, err := checkFrame(data, int64(len(data)))
	if err != nil {
		return nil, err
	}
	end := headerSize + recLen + stateLen
	if crc32.Checksum(data[:end], castagnoli) != binary.LittleEndian.Uint32(data[end:]) {
		return nil, &CorruptError{Err: errChecksum}
	}
	if !known(version) {
		return nil, &VersionError{Version: int(version)}
	}
	c, err := decodeRecord(data[headerSize:headerSize+recLen], version, copyBytes)
	if err != nil {
		return nil, err
	}
	if stateLen > 0 {
		state := data[headerSize+recLen : end : end]
		if copyBytes {
			state = bytes.Clone(state)
		}
		c.State = state
	}
	return c, nil
}

// decodeRecord decodes a record of version 2 or 3.
func decodeRecord(r []byte, version uint32, copyBytes bool) (*Checkpoint, error) {
	bad := malformed
	fixed, strs := layout(version)
	if len(r) < fixed {
		return nil, bad("shorter than its fixed fields")
	}
	c, err := decodeFixed(r[:fixed])
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	r = r[fixed:]
	next := func() ([]byte, bool) {
		if len(r) < 4 {
			return nil, false
		}
		n := le.Uint32(r)
		if uint64(n) > uint64(len(r)-4) {
			return nil, false
		}
		b := r[4 : 4+n : 4+n]
		r = r[4+n:]
		return b, true
	}
	fields := c.stringFields()
	for _, f := range fields[:strs] {
		b, ok := next()
		if !ok {
			return nil, bad("a length beyond its end")
		}
		*f = string(b)
	}
	if err := checkVersion(c, version); err != nil {
		return nil, err
	}
	engine, ok := next()
	if !ok {
		return nil, bad("a length beyond its end")
	}
	if len(r) != 0 {
		return nil, bad("trailing bytes")
	}
	if len(engine) > 0 {
		if copyBytes {
			engine = bytes.Clone(engine)
		}
		c.Engine = engine
	}
	return c, nil
}

// stringFields returns the string fields of c in the order of the record.
func (c *Checkpoint) stringFields() [6]*string {
	return [6]*string{&c.Session, &c.Status, &c.Reason, &c.Question, &c.Fingerprint, &c.Origin.Session}
}

// checkVersion refuses a version-3 record without the fields of version 3:
// that checkpoint is written in version 2.
func checkVersion(c *Checkpoint, version uint32) error {
	if version != version2 && c.formatVersion() == version2 {
		return malformed("version 3 without the fields of version 3")
	}
	return nil
}

// decodeFixed decodes the fixed fields of a record, its first recordFixed
// bytes (version 2) or recordFixed3 (version 3).
func decodeFixed(r []byte) (*Checkpoint, error) {
	le := binary.LittleEndian
	c := &Checkpoint{
		Generation: le.Uint64(r[0:8]),
		Token:      le.Uint64(r[8:16]),
	}
	it := int64(le.Uint64(r[16:24]))
	if it < math.MinInt || it > math.MaxInt {
		return nil, malformed("iteration out of range")
	}
	c.Iteration = int(it)
	sec, nsec := int64(le.Uint64(r[24:32])), le.Uint32(r[32:36])
	if nsec >= 1e9 {
		return nil, malformed("nanoseconds out of range")
	}
	c.Time = time.Unix(sec, int64(nsec)).UTC()
	if len(r) >= recordFixed3 {
		c.BestGeneration = le.Uint64(r[36:44])
		c.Origin.Generation = le.Uint64(r[44:52])
	}
	return c, nil
}

// malformed returns the *CorruptError of a malformed record.
func malformed(what string) error {
	return &CorruptError{Err: fmt.Errorf("%w: %s", errRecord, what)}
}

// peekToken returns the generation and token recorded in the first bytes of
// an encoding (at least headerSize+16), if its header is that of a record of
// a version this package reads (the two share these fields) and of size
// bytes. The checksum is not verified: the
// result serves only as a lower bound for new fencing tokens.
func peekToken(head []byte, size int64) (uint64, bool) {
	if len(head) < headerSize+16 {
		return 0, false
	}
	version, _, _, err := checkFrame(head, size)
	if err != nil || !known(version) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(head[headerSize+8:]), true
}
