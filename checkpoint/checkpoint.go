// Package checkpoint saves and restores the progress of a refinement loop.
//
// A store moves bytes: this package imports nothing of the refine module
// and knows neither the loop's state type nor the engine's records.
//
// # Checkpoints
//
// A [Checkpoint] is a small envelope a store and an operator can read (the
// session, generation, fencing token, status, reason, iteration, time, open
// question and settings fingerprint) plus two opaque byte slices: the
// engine's resume record and the encoded loop state. [Marshal] and
// [Unmarshal] give it a self-checking binary form (format [Version], a
// CRC-32C over the whole record), so damage is detected and reported, never
// loaded. An encoded checkpoint is at most 1 GiB; Marshal and the stores
// refuse a larger one and Unmarshal treats a larger length as damage.
//
// # Stores
//
// [Memory] keeps checkpoints in memory; [Dir] keeps them in a directory,
// writing each generation atomically, keeping the last few generations and
// falling back to the newest good one when newer ones are damaged (Load
// reports the generations it skipped in [Checkpoint.Skipped]). Both have the
// same eight methods: Save, Load, Lock, Remove, Sessions, which lists the
// sessions with their envelopes, read-only and without decoding states, for
// tools that watch loops ([Dir.Sessions]), SaveFrom, a Save whose state
// is written by an io.WriterTo, so that a large state is encoded straight
// into the store without a copy of its own ([Dir.SaveFrom]), and
// Generations and LoadGeneration, which list a session's kept generations
// and load any of them, read-only, for a session's history and for forks
// ([Dir.Generations], [Dir.LoadGeneration]).
//
// # Retention
//
// By default a store keeps the newest 3 generations of a session
// ([DefaultKeep]; [Keep] and Memory.Keep change it). It can also keep every
// generation ([KeepAll]), keep the generation holding a loop's best state
// beside the newest ([KeepBest]: see [Checkpoint.BestGeneration]), and
// bound a session's size ([MaxBytes]); Memory has the same settings as
// fields. Pruning never removes the newest generation, nor, with KeepBest,
// the best.
//
// # Locks and fencing
//
// Lock takes a session's lock and returns a fencing token, a number that
// grows with every new holder of the session. A checkpoint saved with a
// non-zero [Checkpoint.Token] is refused with a *[FencedError] unless the
// token is that of a lock the store still holds for the session: a run that
// lost its lock (its directory deleted, a second run holding a new lock) can
// no longer write. A checkpoint with Token 0 is saved without this check.
package checkpoint

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Version is the newest version of the checkpoint format, written and read
// by this package. A checkpoint without [Checkpoint.BestGeneration] and
// [Checkpoint.Origin] is written in version 2, which version 3 extends
// with them, so that the files of loops that use neither stay readable by
// earlier releases; both versions are read. A record of any other version
// (version 1 included: there is no migration) gives a *[VersionError].
const Version = 3

// Checkpoint is the saved progress of one loop session. Stores treat it as a
// value: they copy what they keep and never modify what they are given.
//
// The envelope fields are what a store or an operator may read; Engine and
// State are opaque to both.
type Checkpoint struct {
	// Session names the loop session; see [ValidateSession].
	Session string
	// Generation increases with every save of a session. Stores write a save
	// as generation max(Generation, newest+1), so the latest save wins.
	Generation uint64
	// Token is the fencing token of the writer's lock, as returned by Lock;
	// 0 means the writer holds no lock and the save is not fenced.
	Token uint64
	// Status is the loop's status ("running", "interrupted", "converged",
	// ... as the engine names them) and Reason explains it.
	Status string
	Reason string
	// Iteration is the number of completed iterations.
	Iteration int
	// Time is when the checkpoint was saved. It round-trips as an instant
	// (in UTC; no monotonic reading, no location).
	Time time.Time
	// Question is the open question put to a human, when escalated.
	Question string
	// Fingerprint identifies the loop's settings, so that a resume under
	// different settings can be refused.
	Fingerprint string
	// BestGeneration is the generation of this session whose State is the
	// best state the loop has seen so far, as the engine keeps it (see
	// iterate.WithKeepBest); 0 when no generation of the session holds it
	// or the loop keeps no best. A store that retains the best (see
	// [KeepBest]) never prunes the generation the newest one names here.
	BestGeneration uint64
	// Origin is where the session was forked from; zero for a session that
	// was not forked.
	Origin Origin
	// Engine is the engine's resume record, opaque to stores.
	Engine []byte
	// State is the encoded loop state, opaque to stores.
	State []byte

	// Skipped is set by Load and never saved: the newer generations of the
	// session that were damaged and skipped (newest first), so that a host
	// can report the fallback to this older one.
	Skipped []uint64
}

// Origin names the generation of another session that a session was
// forked from.
type Origin struct {
	Session    string
	Generation uint64
}

// Clone returns a deep copy of c that shares no memory with it; nil and
// empty slices stay as they are. Clone of nil is nil.
func (c *Checkpoint) Clone() *Checkpoint {
	if c == nil {
		return nil
	}
	d := *c
	d.Engine = slices.Clone(c.Engine)
	d.State = slices.Clone(c.State)
	d.Skipped = slices.Clone(c.Skipped)
	return &d
}

// ErrNotFound is returned by Load when a session has no checkpoint.
var ErrNotFound = errors.New("checkpoint: not found")

// ErrCorrupt is matched by every *CorruptError.
var ErrCorrupt = errors.New("checkpoint: corrupt")

// CorruptError reports a checkpoint that cannot be read because it is
// damaged: truncated, failing its checksum, of an absurd length, recording
// another session; or, from [Dir.Load], a session whose only generations
// were damaged and quarantined.
type CorruptError struct {
	// Path of the damaged file, if any, and its Generation.
	Path       string
	Generation uint64
	// Err says what is wrong.
	Err error
}

// Error describes the error.
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

// VersionError reports an intact checkpoint written in a format version this
// package does not read, such as version 1 or a newer one. It is not damage:
// stores return it and leave the file alone.
type VersionError struct {
	// Version is the format version the record carries.
	Version int
}

// Error describes the error.
func (e *VersionError) Error() string {
	return fmt.Sprintf("checkpoint: unsupported format version %d (this package reads versions %d and %d)", e.Version, version2, Version)
}

// Is reports whether target is ErrVersion.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// ErrLocked is matched by every *LockedError.
var ErrLocked = errors.New("checkpoint: session locked")

// LockedError reports that another run holds the session's lock.
type LockedError struct {
	// Session is the session asked for.
	Session string
	// Holder describes the holder when known, e.g. "pid 4242".
	Holder string
}

// Error describes the error.
func (e *LockedError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "another run"
	}
	return fmt.Sprintf("checkpoint: session %s is locked by %s", quoteSession(e.Session), holder)
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// ErrFenced is matched by every *FencedError.
var ErrFenced = errors.New("checkpoint: fenced")

// FencedError reports a save by a writer whose lock is no longer current: a
// checkpoint whose Token is not the token of a lock the store still holds
// for the session (released, taken over by a newer holder, or its lock file
// deleted). The writer must stop: another run may own the session.
type FencedError struct {
	// Session is the session of the refused checkpoint.
	Session string
	// Token is the checkpoint's token; Current the newest token issued for
	// the session, 0 when unknown.
	Token, Current uint64
}

// Error describes the error.
func (e *FencedError) Error() string {
	s := fmt.Sprintf("checkpoint: save of session %s with fencing token %d refused: the writer no longer holds the session's lock", quoteSession(e.Session), e.Token)
	if e.Current != 0 {
		s += fmt.Sprintf(" (newest token %d)", e.Current)
	}
	return s
}

// Is reports whether target is ErrFenced.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// ErrNilCheckpoint is returned when a nil *Checkpoint is saved or marshalled.
var ErrNilCheckpoint = errors.New("checkpoint: nil checkpoint")

// ErrInvalidSession is matched by every *SessionError.
var ErrInvalidSession = errors.New("checkpoint: invalid session name")

// SessionError reports a session name that a store cannot use. See
// [ValidateSession] for the rules. Its message quotes at most the first 40
// bytes of the name.
type SessionError struct {
	// Session is the name refused, whole.
	Session string
	// Reason says which rule the name breaks.
	Reason string
}

// Error describes the error.
func (e *SessionError) Error() string {
	return fmt.Sprintf("checkpoint: invalid session name %s: %s", quoteSession(e.Session), e.Reason)
}

// Is reports whether target is ErrInvalidSession.
func (e *SessionError) Is(target error) bool { return target == ErrInvalidSession }

// quotedMax is how much of a session name an error message quotes.
const quotedMax = 40

// quoteSession quotes a session name for an error message, cut to its first
// quotedMax bytes (on a rune boundary when it is UTF-8) with "…" and its
// length, so that a huge name is never echoed whole.
func quoteSession(s string) string {
	if len(s) <= quotedMax {
		return strconv.Quote(s)
	}
	cut := quotedMax
	for cut > quotedMax-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

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
