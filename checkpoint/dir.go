package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
// suffix (and ".corrupt.N" should that name be taken) and never deleted by a
// save; its generation is never used again. The lock of a session is
// "s.lock". A save writes a temporary file ".s.<random>.tmp" first; one left
// behind by a crash is ignored by Load and deleted when the session's lock
// is next taken, and by Remove. A session's first save creates its
// marker, the empty file "s.session", and syncs the directory, before any
// other file of the session: a Dir tells a new session from one with files
// by the marker alone, so creating a session (Lock, Load, Save) never lists
// the directory and costs the same at 100,000 sessions as at 10. A Dir
// lists the directory once, on its first new session, for the sessions
// written by a version without markers (generation, quarantined or
// temporary files and no marker); a session such a version creates after
// that listing, while this Dir runs, is taken for a new one unless it was
// locked (its lock file existed). Remove deletes the marker last, once no
// other file of the session remains.
//
// The marker holds the session's index: which generation and quarantined
// files it had, in a few lines ending with their CRC. [Dir.Generations]
// reads the index rather than listing the directory, and looks for the
// generations above the index's newest by name, one after another, so
// reading one session costs the same at 100,000 sessions as at 100. A
// save rewrites the index (a temporary file renamed over the marker),
// naming the generation it is about to publish, before publishing it,
// whenever a reader could not find that generation by name: when it is
// not the next one (a jump: the index is then synced, file and directory,
// before the rename), when its prune would delete a generation above the
// index's newest (breaking the chain a reader follows), and every 32
// generations; the directory sync that makes the generation durable makes
// such an index durable too, before the prune. A Load that quarantines a
// file names it in the index first, and Lock rewrites the index from its
// listing of the directory (synced, if it changed): a session an earlier
// version wrote gets one when it is next locked. A marker that holds no
// index (empty, as an earlier version wrote it, torn, or another
// session's) is not trusted: the directory is listed. A save whose index
// cannot be written empties the marker and goes on. A generation file put
// in the directory by hand, not by a Dir, is not in the index:
// Generations finds it once the session is next locked, or at once if the
// marker is emptied. Load, Lock, Remove and Sessions list the directory,
// as before.
//
// The directory's sessions journal, the file ".sessions.journal", gets a
// line for each session a Dir creates (synced, before its marker) or
// removes (after its marker), and its snapshot, the file
// ".sessions.index", holds the sorted names of the directory's sessions
// as of an offset of the journal (with, for each session a listing
// showed, its generation and quarantined files), so that a page of a
// viewer's list, the first a process serves included, costs the same at
// 100,000 sessions as at 100: [Dir.SessionsAfter]'s first call reads the
// snapshot (one file, about 12 bytes a session, bisected for the page's
// first name) and the journal past its offset, then follows the journal.
// The snapshot is trusted only whole (its length and CRC holding) and
// for the journal it was made of (the same first bytes, and the same
// bytes before its offset: a journal replaced, or shortened and grown
// again, is not); otherwise, and without one, the first call lists the
// directory and writes the snapshot. A snapshot is written atomically (a
// temporary file ".sessions.index.tmp…", synced, renamed, the directory
// synced) after the journal it covers is synced, so no crash leaves one
// that covers lines lost; a listing removes the temporary files of a
// write that was killed. It is rewritten, from itself and the journal,
// when the journal runs 64 KiB (about 2,500 sessions created or removed)
// past it: by a reader that read that much of the journal, or by a writer
// whose journal line took it that far (every 16 KiB it reads the
// snapshot's first line; a writer never lists the directory for one), so
// that a first page reads a bounded part of the journal. Writers and
// readers in several processes need no lock: every snapshot written is
// right for the offset it names, the last rename wins, and the journal
// past it is read by whoever uses it. A session a Dir did not create (an
// earlier version's, or one whose files were put there by hand) after
// the snapshot was made is not listed by SessionsAfter until a Dir locks
// it (which journals it), or the snapshot is deleted; Sessions lists it.
// The journal grows by a line for each session created or removed;
// Remove deletes it and the snapshot with the directory's last session,
// and deleting either by hand is harmless (their readers list the
// directory again). Files are created with mode 0600 and the
// directory (by a save without a fencing token, or by Lock) with mode 0700,
// both before the umask; a host that wants other modes creates the
// directory itself or changes them afterwards.
//
// # Saving
//
// Save encodes the checkpoint with the format of [Marshal] straight into a
// temporary file in the directory, fsyncs it, renames it to its final name
// (after checking that no file has that name: a generation is never
// replaced), fsyncs the directory, and then prunes: of the generations older
// than the newest Keep (or as [KeepAll], [KeepBest] and [MaxBytes] say), it
// deletes those whose header it can read as a checkpoint of this format. A file it cannot read (a newer format version,
// a permission error, a directory in its place) is left where it is, and so
// is every quarantined file. On any error the temporary file is removed and
// the earlier generations are untouched. A prune considers every
// generation of the session on disk, not only those this Dir wrote, so the
// first save after one killed between its rename and its prune removes what
// that save left, with or without the session's lock; so does taking the
// lock (see [Dir.Lock]), for a session that is not saved again. A session
// that is neither saved nor locked again keeps them. [Dir.SaveFrom] saves the same way,
// writing the same file, with the state streamed into it.
//
// A save is written as generation max(c.Generation, newest+1), where newest
// is the highest generation of the session this Dir has seen on disk
// (quarantined ones included): the latest save always wins, and no save
// overwrites another. The record written, and hence the checkpoint loaded,
// carries that generation; c itself is never modified. Generations run from
// 1 to 2^64-2, in a Dir as in [Memory]: a file named as generation 0 or
// 2^64-1, which no save writes, is not one of the session's (neither
// loaded, listed, quarantined, pruned nor removed), [Dir.LoadGeneration]
// of either gives an error matching ErrNotFound, and a save that would
// need generation 2^64-1 fails.
//
// A checkpoint with a non-zero Token is saved only if this Dir holds the
// session's lock with that token and the lock file at its path is still the
// file it locked; otherwise Save returns a *[FencedError]. Such a save never
// creates the directory: a holder whose directory was deleted is fenced
// rather than re-creating it behind a new holder.
//
// Dir remembers the generations of each session it has listed, so a save
// does not list the directory. It lists it again on every Load and whenever
// the generation it chose turns out to exist (another writer), so files
// removed or added behind its back are handled.
//
// Directory fsync makes the new name durable. On Unix its errors are
// returned, except EINVAL and ENOTSUP, with which file systems that cannot
// sync a directory answer; elsewhere (Windows) the directory is not synced.
//
// # Loading
//
// Load checks each file's size against the lengths in its header before
// reading it, so a stray file, however large, costs a 20-byte read; an
// encoding above 1 GiB is damage.
type Dir struct {
	path   string
	keep   int
	retain retention // KeepAll, KeepBest, MaxBytes
	// hook, when set (by tests only), is called at each stage of a save
	// ("write", "sync", "publish", "index" before its index is written,
	// "indexed" after, before the rename); an error it returns fails the
	// save there. It is also called, its error ignored, before and after
	// the prune at Lock ("lock prune", "lock pruned"), and at the stages
	// of a snapshot's write ("snapshot", "snapshot rename"), whose error
	// ends it.
	hook func(stage string) error
	// sync, when set (by tests only), is called in place of f.Sync for
	// every fsync of a file or of the directory (see fsync).
	sync func(f *os.File) error
	// onList, when set (by tests only), is called at each listing of the
	// directory.
	onList func()
	// noIndex, when set (by tests only), makes the Dir neither read nor
	// write indexes: every read of a session lists the directory.
	noIndex bool
	// compactAt and compactEvery, when set (by tests only), replace
	// compactAfter and compactCheck (see Dir.compactJournal).
	compactAt, compactEvery int64

	mu       sync.Mutex
	sessions map[string]*dirSession

	unmarkedMu sync.Mutex
	unmarked   map[string]bool // see unmarkedSessions; nil until listed

	namesMu sync.Mutex
	names   *nameCache // see sessionNames; nil until listed
}

// dirSession is what a Dir knows of one session's files.
type dirSession struct {
	mu      sync.Mutex // serialises this process's operations on the session
	scanned bool       // gens and newest reflect a listing
	gens    []uint64   // generations on disk, ascending
	newest  uint64     // highest generation seen, quarantined included; never decreases
	corrupt []quarantined
	lock    *heldLock // the session's lock, while this Dir holds it
	token   uint64    // newest fencing token this Dir issued
	// indexed says that the session's index on disk, whichever of the
	// versions this Dir wrote since it last synced the directory survived,
	// finds every generation up to indexTop, that above it by name (see
	// Dir.indexed): a save of generation indexTop+1 needs not sync its
	// index before publishing.
	indexed  bool
	indexTop uint64
	// indexWritten says that the save in progress wrote the index.
	indexWritten bool
	// journaled says that the session's marker existed, or was journaled
	// ("+" in the sessions journal) before this Dir created it.
	journaled bool
}

// quarantined is a quarantined file of a session, as listed.
type quarantined struct {
	gen  uint64
	name string
}

// heldLock is a session lock held by a Dir.
type heldLock struct {
	f     *os.File
	token uint64
}

// DirOption configures a [Dir].
type DirOption interface{ applyDir(*Dir) }

type keepOption int

func (k keepOption) applyDir(d *Dir) { d.keep = max(int(k), 1) }

// Keep sets how many generations of a session a [Dir] keeps (default 3,
// minimum 1).
func Keep(n int) DirOption { return keepOption(n) }

// NewDir returns a store for the directory path, created on first save or
// lock. A nil option is ignored.
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

func (d *Dir) lockPath(session string) string {
	return filepath.Join(d.dir(), session+".lock")
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

// fsync syncs f, a file or the directory, to stable storage: through the
// sync of a test that records the calls, if set.
func (d *Dir) fsync(f *os.File) error {
	if d.sync != nil {
		return d.sync(f)
	}
	return f.Sync()
}

func (d *Dir) fail(stage string) error {
	if d.hook == nil {
		return nil
	}
	return d.hook(stage)
}

// Save writes c as a new generation and prunes generations beyond Keep.
func (d *Dir) Save(ctx context.Context, c *Checkpoint) error {
	return d.save(ctx, c, nil)
}

// SaveFrom is Save with the state written by state.WriteTo, which encodes
// it straight into the generation's temporary file, instead of taken from
// c.State, which must be empty. The file written is the one Save writes for
// a c.State holding the same bytes: the state's length and the checksum are
// filled in once the stream ends.
//
// state.WriteTo is called once, before the file is published, and must not
// keep the writer. The checkpoint is refused, and nothing published, when
// the stream fails (its error is returned), or takes the checkpoint above
// 1 GiB (refused at the write that would, before it reaches the file); the
// temporary file is removed, as on any failed save, and the earlier
// generations are untouched. Should another writer take the generation
// chosen while the file is written, the file is not written again: its
// generation and checksum are rewritten in place.
func (d *Dir) SaveFrom(ctx context.Context, c *Checkpoint, state io.WriterTo) error {
	if err := checkStream(c, state); err != nil {
		return err
	}
	return d.save(ctx, c, state)
}

// save is Save, with the state from state unless it is nil.
func (d *Dir) save(ctx context.Context, c *Checkpoint, state io.WriterTo) error {
	if err := checkSave(ctx, c); err != nil {
		return err
	}
	s := d.session(c.Session)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := d.fence(c, s); err != nil {
		return err
	}
	if !s.scanned {
		if _, err := d.scanUnlessFresh(c.Session, s); err != nil {
			return err
		}
	}
	journaled := true
	if !s.journaled {
		// A new session is journaled before its marker is created, so that
		// no kill leaves a marker that a reader following the journal
		// misses.
		if _, err := os.Lstat(d.markerPath(c.Session)); errors.Is(err, fs.ErrNotExist) {
			// In a directory not yet created, once mark has created it.
			journaled = d.journal('+', c.Session)
		}
		s.journaled = true
	}
	created, err := d.mark(c.Session, c.Token == 0)
	if err == nil && !journaled {
		d.journal('+', c.Session)
	}
	if err != nil {
		if c.Token != 0 && errors.Is(err, fs.ErrNotExist) {
			return d.fence(c, s)
		}
		return fmt.Errorf("checkpoint: saving session %s: %w", quoteSession(c.Session), err)
	}
	if created && len(s.gens) == 0 && len(s.corrupt) == 0 && s.newest == 0 {
		s.indexed, s.indexTop = true, 0 // the marker holds the empty index
	}
	gen, err := d.write(c, s, state)
	if err != nil {
		var fe *FencedError
		if errors.As(err, &fe) {
			return fe
		}
		var se *streamSizeError
		if errors.As(err, &se) {
			return se
		}
		return fmt.Errorf("checkpoint: saving session %s: %w", quoteSession(c.Session), err)
	}
	s.gens = append(s.gens, gen) // gen > every generation known: still ascending
	s.newest = gen
	if err := syncDir(d.dir(), d.fsync); err != nil {
		return fmt.Errorf("checkpoint: saving session %s: syncing directory: %w", quoteSession(c.Session), err)
	}
	if s.indexWritten {
		// The index written before the rename, naming gen, is on disk.
		s.indexed, s.indexTop = true, gen
	}
	d.prune(c.Session, s, c.BestGeneration)
	return nil
}

// fence returns a *FencedError if c has a token and this Dir does not hold
// the session's lock with it, or the lock file at its path is no longer the
// file locked (deleted, with or without its directory, and perhaps replaced
// by another holder's). s.mu must be held.
func (d *Dir) fence(c *Checkpoint, s *dirSession) error {
	if c.Token == 0 {
		return nil
	}
	path := d.lockPath(c.Session)
	if h := s.lock; h != nil && h.token == c.Token {
		held, herr := h.f.Stat()
		onDisk, err := os.Lstat(path)
		if err == nil && herr == nil && os.SameFile(held, onDisk) {
			return nil
		}
	}
	current, _ := readLockFile(path)
	return &FencedError{Session: c.Session, Token: c.Token, Current: current}
}

// write writes c, with its state from state unless it is nil, to a
// temporary file and publishes it as a new generation, which it returns. On
// error, or should the stream panic, the temporary file is gone.
func (d *Dir) write(c *Checkpoint, s *dirSession, state io.WriterTo) (gen uint64, err error) {
	f, err := d.createTemp(c.Session, c.Token == 0)
	if err != nil {
		if c.Token != 0 && errors.Is(err, fs.ErrNotExist) {
			return 0, d.fence(c, s)
		}
		return 0, err
	}
	tmp := f.Name()
	published := false
	defer func() {
		if f != nil {
			f.Close()
		}
		if !published {
			os.Remove(tmp)
		}
	}()
	if gen, err = nextGen(c, s); err != nil {
		return 0, err
	}
	var st streamedState
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			// The generation was taken behind our back: rewrite the file
			// with the next one; a streamed one in place, as its stream
			// cannot run again.
			flags := os.O_WRONLY | os.O_TRUNC
			if state != nil {
				flags = os.O_WRONLY
			}
			if f, err = os.OpenFile(tmp, flags, 0); err != nil {
				return 0, err
			}
		}
		switch {
		case state == nil:
			err = c.writeTo(f, gen)
		case attempt == 0:
			st, err = writeStream(f, c, gen, state)
		default:
			err = st.regenerate(f, c, gen)
		}
		if err != nil {
			return 0, err
		}
		if err = d.fail("write"); err != nil {
			return 0, err
		}
		if err = d.fsync(f); err != nil {
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
		// Check the fence again just before the rename, so that a lock lost
		// while the file was written is not published.
		if err = d.fence(c, s); err != nil {
			return 0, err
		}
		// The index names gen before gen is published when a reader
		// could not find gen by name (see Dir.indexed and indexFor).
		if err = d.indexFor(c, s, gen); err != nil {
			return 0, err
		}
		if err = d.fail("indexed"); err != nil {
			return 0, err
		}
		err = publish(tmp, filepath.Join(d.dir(), genName(c.Session, gen)))
		if err == nil {
			published = true
			return gen, nil
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 2 {
			return 0, err
		}
		if err = d.scan(c.Session, s); err != nil {
			return 0, err
		}
		s.indexed = false // another writer's index
		if gen, err = nextGen(c, s); err != nil {
			return 0, err
		}
	}
}

// errGenerationsExhausted is the cause of the error of a save that would
// need generation 2^64-1 (see Dir).
var errGenerationsExhausted = errors.New("generation numbers exhausted: remove the session, or its newest files")

// validGeneration reports whether gen is a generation number: generations
// run from 1 to 2^64-2. A save is numbered above the newest generation,
// from 1, so none is numbered 0; and none 2^64-1, which no save could
// follow (newest+1 would wrap to 0). This one rule decides which files are
// generations (parseName, hence Load, saves, Lock, Remove, Sessions and
// Generations), which generations LoadGeneration loads, and which
// generation a save may be given (nextGeneration), in a Dir and in Memory.
func validGeneration(gen uint64) bool { return gen != 0 && gen != math.MaxUint64 }

// nextGeneration returns the generation a save asking for asked is written
// as, in a session whose newest generation is newest: max(asked,
// newest+1), which must be a generation (validGeneration).
func nextGeneration(asked, newest uint64) (uint64, error) {
	gen := max(asked, newest+1)
	if !validGeneration(gen) {
		return 0, errGenerationsExhausted
	}
	return gen, nil
}

// nextGen returns the generation a save of c is written as (see
// nextGeneration). s.newest is a generation or 0: parseName reads no file
// as generation 2^64-1.
func nextGen(c *Checkpoint, s *dirSession) (uint64, error) {
	return nextGeneration(c.Generation, s.newest)
}

// notAGeneration is the error of a request for generation gen of session,
// in where, when gen is not a generation number (validGeneration): no
// generation has that number, so it is not found.
func notAGeneration(gen uint64, session, where string) error {
	return fmt.Errorf("%w: generation %d of session %s %s: not a generation number (generations run from 1 to 2^64-2)", ErrNotFound, gen, quoteSession(session), where)
}

// createTemp creates the temporary file of a save (mode 0600), and the
// directory (mode 0700) if it is missing and mkdir is true.
func (d *Dir) createTemp(session string, mkdir bool) (*os.File, error) {
	pattern := "." + session + ".*.tmp"
	f, err := os.CreateTemp(d.dir(), pattern)
	if mkdir && errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(d.dir(), 0o700); err != nil {
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

// prune deletes the oldest generations of the session beyond Keep (or as
// KeepAll, KeepBest and MaxBytes say: see retention.drop, given best, the
// newest's best generation), those whose header reads as a checkpoint of
// this format; the others stay (and stay listed). Failures are left for a
// later prune: the save they follow has succeeded.
func (d *Dir) prune(session string, s *dirSession, best uint64) {
	s.gens = d.pruneGens(session, s.gens, d.pruning(session, s.gens, best))
}

// pruning is which generations of a list a prune removes: those at an
// index below n, or, when drop is not nil, those it marks.
type pruning struct {
	n    int
	drop []bool
}

// at reports whether the generation at index i is removed.
func (p pruning) at(i int) bool {
	if p.drop != nil {
		return p.drop[i]
	}
	return i < p.n
}

// none reports whether no generation is removed.
func (p pruning) none() bool {
	if p.drop != nil {
		return !slices.Contains(p.drop, true)
	}
	return p.n <= 0
}

// pruning returns which of gens (ascending, the newest last) a prune
// removes under the Dir's retention, given best, the newest's best
// generation. The newest is never removed.
func (d *Dir) pruning(session string, gens []uint64, best uint64) pruning {
	n := len(gens) - d.keepN()
	if d.retain.plain() {
		return pruning{n: n}
	}
	var size func(int) int64
	if d.retain.maxBytes > 0 {
		size = func(i int) int64 {
			fi, err := os.Lstat(filepath.Join(d.dir(), genName(session, gens[i])))
			if err != nil {
				return 0
			}
			return fi.Size()
		}
	}
	return pruning{drop: d.retain.drop(gens, d.keepN(), best, size)}
}

// pruneGens deletes the generations of gens that p removes, those whose
// header reads as a checkpoint of this format, and returns those left, in
// gens' storage.
func (d *Dir) pruneGens(session string, gens []uint64, p pruning) []uint64 {
	if p.none() {
		return gens
	}
	kept := gens[:0]
	for i, g := range gens {
		if p.at(i) {
			path := filepath.Join(d.dir(), genName(session, g))
			if intact(path) {
				err := os.Remove(path)
				if err == nil || errors.Is(err, fs.ErrNotExist) {
					continue
				}
			}
		}
		kept = append(kept, g)
	}
	return kept
}

// pruneAtLock prunes the session when its lock is taken, as the save of
// its newest generation would have had it not been killed between its
// rename and its prune (see Dir.Lock). It prunes relative to the
// generation a Load would return: going down from the newest, the first
// that reads whole (its checksum verified) and records its own
// generation; the damaged ones above it, which Load quarantines, stay and
// are not counted. Should a generation Load would stop at come first
// (another format version, a permission error, a file that is not a
// regular one, a record of another generation), nothing is pruned. So that
// a lock does not read the newest generation whole for nothing, its
// envelope is read first, and the file whole only if a prune relative to
// it removes something (a prune relative to an older one removes no more).
// s.mu and the session's lock must be held.
func (d *Dir) pruneAtLock(session string, s *dirSession) {
	if d.retain.all && d.retain.maxBytes == 0 {
		return // KeepAll alone prunes nothing
	}
	if !s.scanned {
		return // the directory could not be listed
	}
	for k := len(s.gens) - 1; k > 0; k-- {
		gen := s.gens[k]
		path := filepath.Join(d.dir(), genName(session, gen))
		env, err := readEnvelope(path, session)
		var ce *CorruptError
		switch {
		case errors.As(err, &ce):
			continue // damaged: Load quarantines it and falls back
		case err != nil, env.Generation != gen:
			return
		}
		if d.pruning(session, s.gens[:k+1], env.BestGeneration).none() {
			return
		}
		c, err := readGen(path, session)
		switch {
		case errors.As(err, &ce):
			continue
		case err != nil, c.Generation != gen:
			return
		}
		newer := slices.Clone(s.gens[k+1:])
		p := d.pruning(session, s.gens[:k+1], c.BestGeneration)
		// A prune above the index's newest would break the chain its
		// readers follow: the index, naming every generation, is synced
		// first (rare: generations a killed save left).
		above := false
		for i, g := range s.gens[:k+1] {
			above = above || p.at(i) && (!s.indexed || g > s.indexTop)
		}
		if above && !d.noIndex {
			written, err := d.tryIndex(session, s.gens, s.corrupt, true)
			if err != nil {
				return
			}
			s.indexed, s.indexTop = written, indexTop(s.gens, s.corrupt)
		}
		d.fail("lock prune") // tests kill here, and at "lock pruned"
		kept := d.pruneGens(session, s.gens[:k+1], p)
		d.fail("lock pruned")
		s.gens = append(kept, newer...)
		return
	}
}

// intact reports whether the file at path is a regular file whose header is
// that of a checkpoint of this format and of the file's size.
func intact(path string) bool {
	f, size, err := openGen(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var hdr [headerSize]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return false
	}
	version, _, _, err := checkFrame(hdr[:], size)
	return err == nil && known(version)
}

// scan lists the directory and records the session's generations and
// quarantined files.
func (d *Dir) scan(session string, s *dirSession) error {
	names, err := d.readNames()
	if err != nil {
		return fmt.Errorf("checkpoint: listing %s: %w", d.dir(), err)
	}
	s.scanNames(session, names)
	return nil
}

// scanNames records the session's generations and quarantined files among
// names, a listing of the directory.
func (s *dirSession) scanNames(session string, names []string) {
	before := s.newest
	defer func() {
		if s.newest != before {
			// Generations this Dir did not write: whether a reader of
			// the index finds them by name is not known.
			s.indexed = false
		}
	}()
	s.gens = s.gens[:0]
	s.corrupt = s.corrupt[:0]
	for _, name := range names {
		gen, kind := parseName(name, session)
		switch kind {
		case kindGeneration:
			s.gens = append(s.gens, gen)
		case kindCorrupt:
			s.newest = max(s.newest, gen)
			s.corrupt = append(s.corrupt, quarantined{gen, name})
		}
	}
	slices.Sort(s.gens)
	if n := len(s.gens); n > 0 {
		s.newest = max(s.newest, s.gens[n-1])
	}
	s.scanned = true
}

// readNames lists the directory: its names, none if it does not exist.
func (d *Dir) readNames() ([]string, error) {
	if d.onList != nil {
		d.onList()
	}
	return readNames(d.dir())
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

// errQuarantined is the reason of the *CorruptError of a session with
// quarantined files and no readable generation.
var errQuarantined = errors.New("no readable generation, and damaged generations remain quarantined until the session is removed")

// Load returns the newest readable generation of session.
//
// Damaged newer generations are quarantined (renamed with a ".corrupt"
// suffix, never deleted) and skipped: the result's Skipped lists every
// quarantined generation newer than the one returned, newest first, on this
// Load and on later ones until a newer generation is saved or the session is
// removed. A generation is damaged when it fails [Unmarshal] with a
// *CorruptError (its size disagreeing with its header included) or records
// another session.
//
// Anything else that keeps a generation from being read is returned, with
// nothing skipped and no file touched: a *VersionError for a file of another
// format version, an *fs.PathError for a permission error, a directory in
// the file's place (matching syscall.EISDIR) or another file that is not a
// regular one.
//
// With no readable generation, Load returns a *CorruptError if the session
// has quarantined files (found now or earlier: the damage stays visible
// until [Dir.Remove]), else an error matching ErrNotFound.
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
	if _, err := d.scanUnlessFresh(session, s); err != nil {
		return nil, err
	}
	var damaged []*CorruptError
	gone := 0 // generations no longer in s.gens, at its end
	defer func() {
		s.gens = s.gens[:len(s.gens)-gone]
	}()
	for i := len(s.gens) - 1; i >= 0; i-- {
		gen := s.gens[i]
		path := filepath.Join(d.dir(), genName(session, gen))
		c, err := readGen(path, session)
		var ce *CorruptError
		switch {
		case err == nil:
			c.Skipped = s.skipped(gen)
			return c, nil
		case errors.Is(err, fs.ErrNotExist):
			// Removed since the listing (pruned by another writer).
		case errors.As(err, &ce):
			ce.Path, ce.Generation = path, gen
			// The index names the quarantined file before it exists.
			index := func(q string) error {
				return d.writeIndex(session, s.gens, append(slices.Clip(s.corrupt), quarantined{gen, filepath.Base(q)}), false)
			}
			if q, qerr := quarantine(path, index); qerr != nil {
				ce.Err = fmt.Errorf("%w (could not quarantine it: %v)", ce.Err, qerr)
			} else {
				ce.Path = q
				s.corrupt = append(s.corrupt, quarantined{gen, filepath.Base(q)})
			}
			damaged = append(damaged, ce)
		default:
			return nil, fmt.Errorf("checkpoint: loading session %s: %w", quoteSession(session), err)
		}
		// Only the newest generations are dropped: an older one returned
		// above stays.
		gone++
	}
	if len(damaged) > 0 {
		ce := damaged[0]
		if len(damaged) > 1 {
			ce.Err = fmt.Errorf("%w; and %d older generations damaged, all quarantined", ce.Err, len(damaged)-1)
		}
		return nil, ce
	}
	if len(s.corrupt) > 0 {
		return nil, d.quarantinedError(s.corrupt)
	}
	return nil, fmt.Errorf("%w: session %s in %s", ErrNotFound, quoteSession(session), d.dir())
}

// skipped returns the quarantined generations above gen, newest first,
// each once; nil if there are none.
func (s *dirSession) skipped(gen uint64) []uint64 {
	var out []uint64
	for _, q := range s.corrupt {
		if q.gen > gen {
			out = append(out, q.gen)
		}
	}
	if out == nil {
		return nil
	}
	slices.Sort(out)
	out = slices.Compact(out)
	slices.Reverse(out)
	return out
}

// errNotRegular is the cause of an *fs.PathError for a file that is neither
// a regular file nor a directory where one is expected.
var errNotRegular = errors.New("not a regular file")

// openGen opens a file to read as a generation, without following a
// symbolic link, and returns it with its size if it is a regular file. A
// directory gives an *fs.PathError matching syscall.EISDIR, anything else
// that is not a regular file one with errNotRegular.
func openGen(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|readFlags, 0)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case fi.IsDir():
		err = &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	case !fi.Mode().IsRegular():
		err = &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// readGen reads and decodes one generation, checking its session. It reads
// the header first and the rest only if the file's size agrees with it.
func readGen(path, session string) (*Checkpoint, error) {
	f, size, hdr, _, _, err := openFrame(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, size)
	copy(data, hdr[:])
	if _, err := io.ReadFull(f, data[headerSize:]); err != nil {
		return nil, readErr(err)
	}
	c, err := unmarshal(data, false) // data is ours: Engine and State may alias it
	if err != nil {
		return nil, err
	}
	if c.Session != session {
		return nil, &CorruptError{Err: fmt.Errorf("records session %s, not %s", quoteSession(c.Session), quoteSession(session))}
	}
	return c, nil
}

// openFrame opens the generation file at path and reads and checks its
// header against its size, before anything else is read: a stray file of
// any size costs a header's read. On success the caller closes f.
func openFrame(path string) (f *os.File, size int64, hdr [headerSize]byte, version uint32, recLen int, err error) {
	f, size, err = openGen(path)
	if err != nil {
		return nil, 0, hdr, 0, 0, err
	}
	fail := func(err error) (*os.File, int64, [headerSize]byte, uint32, int, error) {
		f.Close()
		return nil, 0, hdr, 0, 0, err
	}
	if size > maxEncoded {
		return fail(&CorruptError{Err: errTooLarge})
	}
	n, err := io.ReadFull(f, hdr[:min(size, headerSize)])
	if err != nil {
		return fail(readErr(err))
	}
	version, recLen, _, err = checkFrame(hdr[:n], size)
	if err != nil {
		return fail(err)
	}
	return f, size, hdr, version, recLen, nil
}

// readErr turns a short read (the file shrank after its size was taken) into
// damage.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &CorruptError{Err: errTruncated}
	}
	return err
}

// quarantine renames a damaged file out of the way, never replacing another
// file, and returns its new path. before, given the new path, is called
// before the rename; its error stops it.
func quarantine(path string, before func(q string) error) (string, error) {
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
	if err := before(q); err != nil {
		return "", err
	}
	if err := os.Rename(path, q); err != nil {
		return "", err
	}
	return q, nil
}

// Lock takes an exclusive lock on the session and returns its fencing token.
// A held lock gives a *LockedError naming the holder's pid.
//
// The lock is the file "<session>.lock" in the directory (created, with the
// directory, if need be), opened without following a symbolic link and
// refused unless it is a regular file with no other hard link (on Unix): a
// link planted there is never followed or written through, so no file
// outside the directory is created or changed. On Unix
// the lock is an flock on it, released by the kernel if the process dies;
// a second Lock of the same session fails even within one process. The
// file holds "pid N" of its holder while held and the session's newest
// token always, and stays when the lock is released. Elsewhere the lock is
// the existence of the file itself (created exclusively, removed on
// release), which a crashed process leaves behind: delete it by hand once
// sure no run is alive.
//
// The token is one above the highest of: the token in the lock file, the
// tokens recorded in the session's generations, and the last token this Dir
// issued. Taking the lock also deletes the temporary files that crashed
// saves of the session left behind, and prunes the session as a save does
// (see Saving), so that the generations a save killed between its rename
// and its prune left behind go even if the session is never saved again.
// That prune is relative to the generation Load would return, read whole
// first: the newest generation whose checksum holds, newer damaged ones
// staying for Load to quarantine. The newest intact generation, and the
// best under [KeepBest], are never pruned; nothing is pruned while the
// newest generation cannot be read for another reason than damage (a
// newer format version, a permission error). A session with files is
// listed once, for all of this, and its index (see Files) rewritten,
// synced, unless its readers already find every file listed.
//
// release gives the lock back; calling it twice is harmless. Saves with the
// token fail with a *FencedError once it is released, or once the lock file
// is no longer the one locked.
func (d *Dir) Lock(ctx context.Context, session string) (token uint64, release func() error, err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	if err := ValidateSession(session); err != nil {
		return 0, nil, err
	}
	s := d.session(session)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(d.dir(), 0o700); err != nil {
		return 0, nil, fmt.Errorf("checkpoint: locking session %s: %w", quoteSession(session), err)
	}
	path := d.lockPath(session)
	_, lerr := os.Lstat(path)
	f, err := takeLock(path, session)
	if err != nil {
		var le *LockedError
		if errors.As(err, &le) {
			return 0, nil, le
		}
		return 0, nil, fmt.Errorf("checkpoint: locking session %s: %w", quoteSession(session), err)
	}
	// A new session (no lock file before this one, no marker: see
	// Dir.fresh) has no generation or temporary file to list.
	fresh := false
	if errors.Is(lerr, fs.ErrNotExist) {
		if fresh, err = d.fresh(session); err != nil {
			unlockFile(f, path)
			return 0, nil, fmt.Errorf("checkpoint: locking session %s: %w", quoteSession(session), err)
		}
	}
	// A session that may have files is listed once, for its generations'
	// tokens, its temporary files, its prune and its index.
	var names []string
	var listErr error
	if !fresh {
		names, listErr = d.readNames()
	}
	token, err = d.nextToken(f, session, s, names)
	if err == nil {
		err = d.writeLock(f, "pid "+strconv.Itoa(os.Getpid())+"\ntoken "+strconv.FormatUint(token, 10)+"\n")
	}
	if err != nil {
		unlockFile(f, path)
		return 0, nil, fmt.Errorf("checkpoint: locking session %s: %w", quoteSession(session), err)
	}
	s.token = token
	h := &heldLock{f: f, token: token}
	s.lock = h
	if fresh {
		s.forget()
	} else {
		d.removeTemps(session, names)
		if listErr == nil {
			s.scanNames(session, names)
		} else {
			s.scanned = false
		}
		d.pruneAtLock(session, s)
		d.reindex(session, s)
	}
	var once sync.Once
	var rerr error
	return token, func() error {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.lock == h {
				s.lock = nil
			}
			// No holder any more; the token stays for the next one.
			d.writeLock(f, "token "+strconv.FormatUint(token, 10)+"\n")
			rerr = unlockFile(f, path)
		})
		return rerr
	}, nil
}

// takeLock locks the file at path and checks that the file locked is still
// the one at path (a Remove or a deleted directory may have unlinked it
// between the open and the lock), trying again if not.
func takeLock(path, session string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		f, err := lockFile(path, session)
		if err != nil {
			return nil, err
		}
		held, herr := f.Stat()
		onDisk, err := os.Lstat(path)
		if herr == nil && err == nil && os.SameFile(held, onDisk) {
			return f, nil
		}
		f.Close()
		if attempt == 2 {
			return nil, fmt.Errorf("the lock file %s was replaced while being locked", path)
		}
	}
}

// nextToken returns the token for a new holder of the session's lock,
// locked in f; names lists the directory (nil for a session without
// files), whose generations' tokens count.
func (d *Dir) nextToken(f *os.File, session string, s *dirSession, names []string) (uint64, error) {
	top := s.token
	if data, err := readSmall(f); err == nil {
		_, t := parseLock(data)
		top = max(top, t)
	}
	for _, name := range names {
		if gen, kind := parseName(name, session); kind == kindGeneration {
			top = max(top, genToken(filepath.Join(d.dir(), genName(session, gen))))
		}
	}
	if top == math.MaxUint64 {
		return 0, errors.New("fencing tokens exhausted")
	}
	return top + 1, nil
}

// genToken returns the token recorded in the generation file at path, 0 if
// its header does not read as one of this format.
func genToken(path string) uint64 {
	f, size, err := openGen(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var head [headerSize + 16]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return 0
	}
	t, _ := peekToken(head[:], size)
	return t
}

// removeTemps deletes the session's temporary files among names, the
// directory's. Its lock must be held.
func (d *Dir) removeTemps(session string, names []string) {
	for _, name := range names {
		if _, kind := parseName(name, session); kind == kindTemp {
			os.Remove(filepath.Join(d.dir(), name))
		}
	}
}

// lockFileMax bounds what is read of a lock file.
const lockFileMax = 512

// readSmall reads at most lockFileMax bytes from the start of f.
func readSmall(f *os.File) ([]byte, error) {
	buf := make([]byte, lockFileMax)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// readLockFile returns the token and holder in the lock file at path,
// opened as a generation is (no link followed, regular files only).
func readLockFile(path string) (uint64, string) {
	f, _, err := openGen(path)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	data, err := readSmall(f)
	if err != nil {
		return 0, ""
	}
	holder, token := parseLock(data)
	return token, holder
}

// writeLock replaces the contents of the lock file f, which is ours (a
// regular file, locked), and syncs it so that the token survives a crash.
func (d *Dir) writeLock(f *os.File, contents string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(contents), 0); err != nil {
		return err
	}
	return d.fsync(f)
}

// parseLock reads a lock file: lines "pid N" (while held) and "token N".
func parseLock(data []byte) (holder string, token uint64) {
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "pid "); ok {
			if _, err := strconv.Atoi(v); err == nil {
				holder = line
			}
		} else if v, ok := strings.CutPrefix(line, "token "); ok {
			if t, err := strconv.ParseUint(v, 10, 64); err == nil {
				token = t
			}
		}
	}
	return holder, token
}

// Remove deletes every file of session: its generations, quarantined files,
// temporary files, and its lock file unless the lock is held (by this Dir
// or anyone else). Afterwards Load returns ErrNotFound, and a new lock's
// token may start again from 1 (no checkpoint carries an older one).
// Removing a session without files is not an error.
//
// A save of the session in flight in another process, which should hold the
// session's lock and so not coexist with Remove, would fail.
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
	names, err := d.readNames()
	if err != nil {
		return fmt.Errorf("checkpoint: removing session %s: %w", quoteSession(session), err)
	}
	var errs []error
	for _, name := range names {
		if _, kind := parseName(name, session); kind != kindOther {
			if err := os.Remove(filepath.Join(d.dir(), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		// The marker last, once no other file of the session is left: a
		// session with files always has its marker.
		if err := os.Remove(d.markerPath(session)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		} else {
			d.forgetUnmarked(session)
			if onlyFilesOf(names, session) {
				// The directory's last session: its journal goes too, its
				// snapshot first (a reader following it lists the
				// directory again).
				os.Remove(d.snapshotPath())
				os.Remove(d.journalPath())
				d.removeSnapshotTemps(names)
			} else {
				d.journal('-', session)
			}
		}
	}
	if err := d.removeLock(session, s); err != nil {
		errs = append(errs, err)
	}
	s.gens = s.gens[:0]
	s.corrupt = s.corrupt[:0]
	s.scanned, s.indexed, s.journaled = false, false, false
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint: removing session %s: %w", quoteSession(session), err)
	}
	return nil
}

// removeLock deletes the session's lock file if it is a regular file that
// nobody holds: it takes the lock, unlinks the file and lets go.
func (d *Dir) removeLock(session string, s *dirSession) error {
	if s.lock != nil {
		return nil
	}
	path := d.lockPath(session)
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := takeLock(path, session)
	if err != nil {
		return nil // held, or not ours to remove
	}
	err = os.Remove(path)
	f.Close()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
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
	if err != nil || !validGeneration(gen) {
		return 0, kindOther // 0 and 2^64-1 are never saved: not a generation
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

// quarantinedError reports the newest of a session's quarantined files: the
// damage stays visible until the session is removed.
func (d *Dir) quarantinedError(corrupt []quarantined) *CorruptError {
	q := slices.MaxFunc(corrupt, func(a, b quarantined) int {
		return cmp.Or(cmp.Compare(a.gen, b.gen), strings.Compare(a.name, b.name))
	})
	return &CorruptError{Path: filepath.Join(d.dir(), q.name), Generation: q.gen, Err: errQuarantined}
}
