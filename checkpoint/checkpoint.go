// Package checkpoint saves and restores the progress of a refinement loop.
//
// A [Checkpoint] is a versioned record of one loop session: the iteration
// reached, the status, timings, failures, usage, open gaps, the convergence
// history, the state as bytes, and a fingerprint of the loop's settings.
// [Marshal] and [Unmarshal] give it a self-checking binary form (a checksum
// over the whole record), so damage is detected and reported, never loaded.
//
// [Memory] keeps checkpoints in memory; [Dir] keeps them in a directory,
// writing each generation atomically (temp file, fsync, rename, fsync of the
// directory), keeping the last few generations and falling back to the newest
// good one when the latest is damaged. Both can lock a session so that two
// runs never proceed at once.
package checkpoint

import (
	"bytes"
	"errors"
	"slices"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

)

// Version is the version of the checkpoint format written by this package.
const Version = 2

// Checkpoint is the saved progress of one loop session: a small envelope a
// store and an operator can read, plus the engine's resume record and the
// state as opaque bytes.
type Checkpoint struct {
	Session     string    `json:"session"`
	Generation  uint64    `json:"generation"`
	Token       uint64    `json:"token,omitempty"`
	Status      string    `json:"status"`
	Reason      string    `json:"reason,omitempty"`
	Iteration   int       `json:"iteration"`
	Time        time.Time `json:"time"`
	Question    string    `json:"question,omitempty"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Engine      []byte    `json:"engine,omitempty"`
	State       []byte    `json:"-"`
	Skipped     []uint64  `json:"-"`
}

// Clone returns a deep copy of c. Clone of nil is nil.
func (c *Checkpoint) Clone() *Checkpoint {
	if c == nil {
		return nil
	}
	d := *c
	d.Engine = bytes.Clone(c.Engine)
	d.State = bytes.Clone(c.State)
	d.Skipped = slices.Clone(c.Skipped)
	return &d
}

// ErrNotFound is returned by Load when a session has no checkpoint.
var ErrNotFound = errors.New("checkpoint: not found")

// ErrCorrupt is matched by every *CorruptError.
var ErrCorrupt = errors.New("checkpoint: corrupt")

// CorruptError reports a checkpoint that cannot be read: truncated, damaged
// or failing its checksum.
type CorruptError struct {
	// Path of the damaged file, if any, and its Generation.
	Path       string
	Generation uint64
	Err        error
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("checkpoint: corrupt")
	if e.Generation > 0 {
		b.WriteString(" generation ")
		b.WriteString(strconv.FormatUint(e.Generation, 10))
	}
	if e.Path != "" {
		b.WriteString(" (")
		b.WriteString(e.Path)
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// ErrVersion is matched by every *VersionError.
var ErrVersion = errors.New("checkpoint: unsupported version")

// VersionError reports a checkpoint written in a format version this package
// cannot read.
type VersionError struct{ Version int }

func (e *VersionError) Error() string {
	return fmt.Sprintf("checkpoint: unsupported format version %d (this package reads version %d)", e.Version, Version)
}

// Is reports whether target is ErrVersion.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// ErrLocked is matched by every *LockedError.
var ErrLocked = errors.New("checkpoint: session locked")

// LockedError reports that another run holds the session's lock.
type LockedError struct {
	Session string
	// Holder describes the holder when known, e.g. "pid 4242 on host a".
	Holder string
}

func (e *LockedError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "another run"
	}
	return fmt.Sprintf("checkpoint: session %q is locked by %s", e.Session, holder)
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// ErrNilCheckpoint is returned when a nil *Checkpoint is saved or marshalled.
var ErrNilCheckpoint = errors.New("checkpoint: nil checkpoint")

// ErrInvalidSession is matched by every *SessionError.
var ErrInvalidSession = errors.New("checkpoint: invalid session name")

// SessionError reports a session name that a store cannot use. See
// [ValidateSession] for the rules.
type SessionError struct {
	Session string
	// Reason says which rule the name breaks.
	Reason string
}

func (e *SessionError) Error() string {
	return fmt.Sprintf("checkpoint: invalid session name %q: %s", e.Session, e.Reason)
}

// Is reports whether target is ErrInvalidSession.
func (e *SessionError) Is(target error) bool { return target == ErrInvalidSession }

// MaxSessionLen is the maximum length of a session name in bytes.
const MaxSessionLen = 200

// ValidateSession returns a *SessionError unless session is usable as a
// session name by every store of this package: non-empty, at most
// [MaxSessionLen] bytes of printable UTF-8, without path separators ('/' or
// '\'), without "..", and not starting with a dot (so that it can name a
// file in a [Dir] without escaping it or hiding among its temporary files).
// [Memory] and [Dir] check names with it on every call.
func ValidateSession(session string) error {
	reason := ""
	switch {
	case session == "":
		reason = "empty"
	case len(session) > MaxSessionLen:
		reason = fmt.Sprintf("longer than %d bytes", MaxSessionLen)
	case !utf8.ValidString(session):
		reason = "not valid UTF-8"
	case strings.ContainsAny(session, `/\`):
		reason = "contains a path separator"
	case strings.Contains(session, ".."):
		reason = `contains ".."`
	case session[0] == '.':
		reason = "starts with a dot"
	default:
		for _, r := range session {
			if !unicode.IsPrint(r) {
				reason = fmt.Sprintf("contains the unprintable character %U", r)
				break
			}
		}
	}
	if reason == "" {
		return nil
	}
	return &SessionError{Session: session, Reason: reason}
}

// ErrFenced is matched by every *FencedError.
var ErrFenced = errors.New("checkpoint: fenced")

// FencedError refuses a save by a writer whose lock is no longer current.
type FencedError struct {
	Session        string
	Token, Current uint64
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("checkpoint: session %q: lock token %d is no longer current (now %d)", e.Session, e.Token, e.Current)
}

// Is reports whether target is ErrFenced.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }
