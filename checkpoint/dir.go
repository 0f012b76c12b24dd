package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Dir keeps checkpoints as files in a directory, one file per generation,
// named after the session. Saves are atomic: a crash at any instant leaves
// either the previous generation or the new one, never a torn file. Safe for
// concurrent use. Create one with [NewDir]; the zero value stores in the
// working directory and keeps 3 generations.
//
// # Files
//
// Generation g of session s is the file "s.<g as 20 digits>.ckpt", for
// example "build.00000000000000000007.ckpt", so that names sort by
// generation. A damaged generation found by Load is renamed with a ".corrupt"
// suffix (and ".corrupt.N" should that name be taken) and never deleted; its
// generation is never used again. The lock of a session is "s.lock". A save
// writes a temporary file ".s.<random>.tmp" first; one left behind by a crash
// is ignored by Load and deleted by Remove. Files are created with mode 0600,
// the directory (on first save or lock) with 0755.
//
// # Saving
//
// Save encodes the checkpoint with the format of [Marshal] straight into a
// temporary file in the directory, fsyncs it, renames it to its final name
// (after checking that no file has that name: a generation is never
// replaced), fsyncs the directory, and then deletes the generations beyond
// the newest Keep. On any error the temporary file is removed and the
// earlier generations are untouched.
//
// A save is written as generation max(c.Generation, newest+1), where newest
// is the highest generation of the session this Dir has seen on disk
// (quarantined ones included): the latest save always wins, and no save
// overwrites another. The record written, and hence the checkpoint loaded,
// carries that generation; c itself is never modified.
//
// Dir remembers the generations of each session it has listed, so a save
// does not list the directory. It lists it again on every Load and whenever
// the generation it chose turns out to exist (another writer), so files
// removed or added behind its back are handled. Two runs writing the same
// session at once are prevented with [Dir.Lock], not by Save.
//
// Directory fsync makes the new name durable. On Unix its errors are
// returned, except EINVAL and ENOTSUP, with which file systems that cannot
// sync a directory answer; elsewhere (Windows) the directory is not synced.
type Dir struct {
	path string
	keep int
	// hook, when set (by tests only), is called at each stage of a save
	// ("write", "sync", "publish"); an error it returns fails the save there.
	hook func(stage string) error

	mu       sync.Mutex
	sessions map[string]*dirSession
}

// dirSession is what a Dir knows of one session's files.
type dirSession struct {
	mu      sync.Mutex // serialises this process's operations on the session
	scanned bool       // gens and newest reflect a listing
	gens    []uint64   // generations on disk, ascending
	newest  uint64     // highest generation seen, quarantined included; never decreases
}

// DirOption configures a [Dir].
type DirOption interface{ applyDir(*Dir) }

type keepOption int

func (k keepOption) applyDir(d *Dir) { d.keep = max(int(k), 1) }

// Keep sets how many generations of a session a [Dir] keeps (default 3,
// minimum 1).
func Keep(n int) DirOption { return keepOption(n) }

// NewDir returns a store for the directory path, created on first save.
// A nil option is ignored.
func NewDir(path string, opts ...DirOption) *Dir {
	d := &Dir{path: path, keep: DefaultKeep}
	for _, o := range opts {
		if o != nil {
			o.applyDir(d)
		}
	}
	return d
}

// Path returns the directory.
func (d *Dir) Path() string { return d.path }

func (d *Dir) dir() string {
	if d.path == "" {
		return "."
	}
	return d.path
}

func (d *Dir) keepN() int {
	if d.keep <= 0 {
		return DefaultKeep
	}
	return d.keep
}

func (d *Dir) session(name string) *dirSession {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sessions[name]
	if s == nil {
		if d.sessions == nil {
			d.sessions = make(map[string]*dirSession)
		}
		s = new(dirSession)
		d.sessions[name] = s
	}
	return s
}

func (d *Dir) fail(stage string) error {
	if d.hook == nil {
		return nil
	}
	return d.hook(stage)
}

// Save writes c as a new generation and prunes generations beyond Keep.
func (d *Dir) Save(ctx context.Context, c *Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c == nil {
		return ErrNilCheckpoint
	}
	if err := ValidateSession(c.Session); err != nil {
		return err
	}
	s := d.session(c.Session)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.scanned {
		if err := d.scan(c.Session, s); err != nil {
			return err
		}
	}
	gen, err := d.write(c, s)
	if err != nil {
		return fmt.Errorf("checkpoint: saving session %q: %w", c.Session, err)
	}
	s.gens = append(s.gens, gen) // gen > every generation known: still ascending
	s.newest = gen
	if err := syncDir(d.dir()); err != nil {
		return fmt.Errorf("checkpoint: saving session %q: syncing directory: %w", c.Session, err)
	}
	d.prune(c.Session, s)
	return nil
}

// write writes c to a temporary file and publishes it as a new generation,
// which it returns. On error the temporary file is gone.
func (d *Dir) write(c *Checkpoint, s *dirSession) (gen uint64, err error) {
	f, err := d.createTemp(c.Session)
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()
	gen = max(c.Generation, s.newest+1)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// The generation was taken behind our back: rewrite the file
			// with the next one.
			if f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_TRUNC, 0); err != nil {
				return 0, err
			}
		}
		if err = c.writeTo(f, gen); err != nil {
			return 0, err
		}
		if err = d.fail("write"); err != nil {
			return 0, err
		}
		if err = f.Sync(); err != nil {
			return 0, err
		}
		if err = d.fail("sync"); err != nil {
			return 0, err
		}
		err = f.Close()
		f = nil
		if err != nil {
			return 0, err
		}
		if err = d.fail("publish"); err != nil {
			return 0, err
		}
		err = publish(tmp, filepath.Join(d.dir(), genName(c.Session, gen)))
		if err == nil {
			return gen, nil
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 2 {
			return 0, err
		}
		if err = d.scan(c.Session, s); err != nil {
			return 0, err
		}
		gen = max(c.Generation, s.newest+1)
	}
}

// createTemp creates the temporary file of a save, and the directory if it
// is missing.
func (d *Dir) createTemp(session string) (*os.File, error) {
	pattern := "." + session + ".*.tmp"
	f, err := os.CreateTemp(d.dir(), pattern)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(d.dir(), 0o755); err != nil {
			return nil, err
		}
		f, err = os.CreateTemp(d.dir(), pattern)
	}
	return f, err
}

// publish renames the temporary file tmp to final unless final exists, in
// which case it fails with an error matching fs.ErrExist: a generation is
// never replaced. Between the check and the rename only a writer of the same
// session that does not hold the session's lock could slip in; within this
// process the session's mutex excludes it.
func publish(tmp, final string) error {
	if _, err := os.Lstat(final); err == nil {
		return &fs.PathError{Op: "publish", Path: final, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Rename(tmp, final)
}

// prune deletes the oldest generations of the session beyond Keep. Failures
// are left for a later prune: the save they follow has succeeded.
func (d *Dir) prune(session string, s *dirSession) {
	n := len(s.gens) - d.keepN()
	if n <= 0 {
		return
	}
	for _, g := range s.gens[:n] {
		os.Remove(filepath.Join(d.dir(), genName(session, g)))
	}
	s.gens = append(s.gens[:0], s.gens[n:]...)
}

// scan lists the directory and records the session's generations.
func (d *Dir) scan(session string, s *dirSession) error {
	names, err := readNames(d.dir())
	if err != nil {
		return fmt.Errorf("checkpoint: listing %s: %w", d.dir(), err)
	}
	s.gens = s.gens[:0]
	for _, name := range names {
		gen, kind := parseName(name, session)
		switch kind {
		case kindGeneration:
			s.gens = append(s.gens, gen)
		case kindCorrupt:
			s.newest = max(s.newest, gen)
		}
	}
	slices.Sort(s.gens)
	if n := len(s.gens); n > 0 {
		s.newest = max(s.newest, s.gens[n-1])
	}
	s.scanned = true
	return nil
}

// readNames returns the names in dir, none if it does not exist.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// Load returns the newest readable generation of session. Damaged newer
// generations are quarantined (renamed with a ".corrupt" suffix, never
// deleted) and described in the result's Notes. With no readable generation
// it returns a *CorruptError if a damaged one existed, else ErrNotFound.
//
// A generation is damaged when it fails [Unmarshal] with a *CorruptError or
// records another session. A generation in a format version this package
// cannot read (written by a newer one) is not damage: Load returns its
// *VersionError and leaves the files as they are. So does any error reading
// a file, such as a permission error.
func (d *Dir) Load(ctx context.Context, session string) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	s := d.session(session)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := d.scan(session, s); err != nil {
		return nil, err
	}
	type damage struct {
		err *CorruptError
		msg string
	}
	var damaged []damage
	gone := 0 // generations no longer in s.gens, at its end
	defer func() {
		s.gens = s.gens[:len(s.gens)-gone]
	}()
	for i := len(s.gens) - 1; i >= 0; i-- {
		gen := s.gens[i]
		path := filepath.Join(d.dir(), genName(session, gen))
		c, err := readFile(path, session)
		var ce *CorruptError
		switch {
		case err == nil:
			for _, dm := range damaged {
				c.Skipped = append(c.Skipped, dm.err.Generation)
			}
			return c, nil
		case errors.Is(err, fs.ErrNotExist):
			// Removed since the listing (pruned by another writer).
		case errors.As(err, &ce):
			ce.Path, ce.Generation = path, gen
			msg := fmt.Sprintf("generation %d damaged (%v)", gen, ce.Err)
			if q, qerr := quarantine(path); qerr != nil {
				msg += fmt.Sprintf(", could not quarantine it: %v", qerr)
			} else {
				ce.Path = q
				msg += ", quarantined as " + filepath.Base(q)
			}
			damaged = append(damaged, damage{ce, msg})
		default:
			return nil, fmt.Errorf("checkpoint: loading session %q from %s: %w", session, path, err)
		}
		// Only the newest generations are dropped: an older one returned
		// above stays.
		gone++
	}
	if len(damaged) == 0 {
		return nil, fmt.Errorf("%w: session %q in %s", ErrNotFound, session, d.dir())
	}
	ce := damaged[0].err
	if len(damaged) > 1 {
		ce.Err = fmt.Errorf("%w; and %d older generations damaged, all quarantined", ce.Err, len(damaged)-1)
	}
	return nil, ce
}

// readFile reads and decodes one generation, checking its session.
func readFile(path, session string) (*Checkpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := unmarshal(data, false) // data is ours: State may alias it
	if err != nil {
		return nil, err
	}
	if c.Session != session {
		return nil, &CorruptError{Err: fmt.Errorf("records session %q, not %q", c.Session, session)}
	}
	return c, nil
}

// quarantine renames a damaged file out of the way, never replacing another
// file, and returns its new path.
func quarantine(path string) (string, error) {
	q := path + ".corrupt"
	for i := 1; ; i++ {
		_, err := os.Lstat(q)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", err
		}
		if i > 1000 {
			return "", fmt.Errorf("too many quarantined copies of %s", path)
		}
		q = path + ".corrupt." + strconv.Itoa(i)
	}
	if err := os.Rename(path, q); err != nil {
		return "", err
	}
	return q, nil
}

// Lock takes an exclusive lock on the session through the operating system
// (flock on Unix), released by the kernel if the process dies. A held lock
// gives a *LockedError naming the holder's pid.
//
// The lock is the file "<session>.lock" in the directory (created with the
// directory if need be), holding "pid N" of its holder while held; the file
// stays when the lock is released. On Unix, a second Lock of the same session
// fails even within one process. Elsewhere the lock is the existence of the
// file itself (created exclusively, removed on release), which a crashed
// process leaves behind: delete it by hand once sure no run is alive.
// release gives the lock back; calling it twice is harmless.
func (d *Dir) Lock(ctx context.Context, session string) (token uint64, release func() error, err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	if err := ValidateSession(session); err != nil {
		return 0, nil, err
	}
	if err := os.MkdirAll(d.dir(), 0o755); err != nil {
		return 0, nil, fmt.Errorf("checkpoint: locking session %q: %w", session, err)
	}
	release, err = lockFile(filepath.Join(d.dir(), session+".lock"), session)
	if err != nil {
		var le *LockedError
		if errors.As(err, &le) {
			return 0, nil, err
		}
		return 0, nil, fmt.Errorf("checkpoint: locking session %q: %w", session, err)
	}
	return 1, release, nil
}

// holderOf describes the holder of a lock from the contents of its file.
func holderOf(data []byte) string {
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSpace(line)
	if pid, ok := strings.CutPrefix(line, "pid "); ok {
		if _, err := strconv.Atoi(pid); err == nil {
			return line
		}
	}
	return ""
}

// lockContents is what a lock file holds while held.
func lockContents() []byte {
	return []byte("pid " + strconv.Itoa(os.Getpid()) + "\n")
}

// Remove deletes every generation of session (not quarantined files).
//
// It also deletes temporary files of the session left behind by crashed
// saves; a save of the session in flight in another process, which should
// hold the session's lock and so not coexist with Remove, would fail.
func (d *Dir) Remove(ctx context.Context, session string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateSession(session); err != nil {
		return err
	}
	s := d.session(session)
	s.mu.Lock()
	defer s.mu.Unlock()
	names, err := readNames(d.dir())
	if err != nil {
		return fmt.Errorf("checkpoint: removing session %q: %w", session, err)
	}
	var errs []error
	for _, name := range names {
		if _, kind := parseName(name, session); kind == kindGeneration || kind == kindTemp {
			if err := os.Remove(filepath.Join(d.dir(), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	s.gens = s.gens[:0]
	s.scanned = false // the next save lists again, for the quarantined generations
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint: removing session %q: %w", session, err)
	}
	return nil
}

// Kinds of file names in a Dir, as parseName classifies them for a session.
const (
	kindOther = iota
	kindGeneration
	kindCorrupt
	kindTemp
)

const genDigits = 20

// genName returns the file name of a generation of session.
func genName(session string, gen uint64) string {
	b := make([]byte, 0, len(session)+1+genDigits+len(".ckpt"))
	b = append(b, session...)
	b = append(b, '.')
	var digits [genDigits]byte
	for i := genDigits - 1; i >= 0; i-- {
		digits[i] = byte('0' + gen%10)
		gen /= 10
	}
	b = append(b, digits[:]...)
	b = append(b, ".ckpt"...)
	return string(b)
}

// parseName classifies a file name of the directory for session, returning
// the generation of generation and quarantined files.
func parseName(name, session string) (uint64, int) {
	if rest, ok := strings.CutPrefix(name, "."); ok {
		// ".<session>.<digits>.tmp"
		rest, ok = cutPrefixDot(rest, session)
		if !ok {
			return 0, kindOther
		}
		digits, ok := strings.CutSuffix(rest, ".tmp")
		if ok && digits != "" && allDigits(digits) {
			return 0, kindTemp
		}
		return 0, kindOther
	}
	rest, ok := cutPrefixDot(name, session)
	if !ok || len(rest) < genDigits+len(".ckpt") || !allDigits(rest[:genDigits]) || rest[genDigits:genDigits+len(".ckpt")] != ".ckpt" {
		return 0, kindOther
	}
	gen, err := strconv.ParseUint(rest[:genDigits], 10, 64)
	if err != nil {
		return 0, kindOther
	}
	switch tail := rest[genDigits+len(".ckpt"):]; {
	case tail == "":
		return gen, kindGeneration
	case tail == ".corrupt":
		return gen, kindCorrupt
	case strings.HasPrefix(tail, ".corrupt.") && allDigits(tail[len(".corrupt."):]) && len(tail) > len(".corrupt."):
		return gen, kindCorrupt
	}
	return 0, kindOther
}

// cutPrefixDot returns what follows "<session>." in name.
func cutPrefixDot(name, session string) (string, bool) {
	if len(name) <= len(session) || name[:len(session)] != session || name[len(session)] != '.' {
		return "", false
	}
	return name[len(session)+1:], true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
