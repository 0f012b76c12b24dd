package checkpoint

// This file lets a Dir tell a new session from one with files without
// listing the directory (issue 31, item 11): creating a session costs the
// same at 100,000 sessions as at 10.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// markerSuffix ends the name of a session's marker file, "<session>.session":
// an empty file that exists whenever the session has generation,
// quarantined or temporary files written by this version (see Dir, Files).
const markerSuffix = ".session"

func (d *Dir) markerPath(session string) string {
	return filepath.Join(d.dir(), session+markerSuffix)
}

// mark creates the session's marker unless it exists, before any other file
// of the session is created, and makes its name durable (the directory
// synced) before the session's first generation can be: a crash never leaves
// a generation without its marker. The marker it creates holds the empty
// index (see Dir.indexed), unsynced: one a crash empties holds no index,
// and its readers list the directory. It never opens an existing file (a
// link planted at its name is left alone, and counts as the marker), and
// reports whether it created the marker. mkdir creates the directory if
// need be.
func (d *Dir) mark(session string, mkdir bool) (bool, error) {
	path := d.markerPath(session)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if mkdir && errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(d.dir(), 0o700); err != nil {
			return false, err
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	created := true
	if !d.noIndex {
		_, err = f.Write(encodeIndex(session, nil, nil))
		created = err == nil
	}
	if err := f.Close(); err != nil {
		return false, err
	}
	if err := syncDir(d.dir(), d.fsync); err != nil {
		return false, fmt.Errorf("syncing directory: %w", err)
	}
	return created, nil
}

// fresh reports whether session has no generation, quarantined or temporary
// file, without listing the directory: its marker is absent, and the one
// listing this Dir makes of the directory (on its first call of fresh)
// found none of its files either (files left by a version that wrote no
// markers). false means "list the directory to know".
func (d *Dir) fresh(session string) (bool, error) {
	_, err := os.Lstat(d.markerPath(session))
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	unmarked, err := d.unmarkedSessions()
	if err != nil {
		return false, err
	}
	return !unmarked[session], nil
}

// unmarkedSessions returns the sessions that had files but no marker when
// this Dir first listed the directory for it; it lists it once.
func (d *Dir) unmarkedSessions() (map[string]bool, error) {
	d.unmarkedMu.Lock()
	defer d.unmarkedMu.Unlock()
	if d.unmarked != nil {
		return d.unmarked, nil
	}
	names, err := d.readNames()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: listing %s: %w", d.dir(), err)
	}
	d.unmarked = unmarkedIn(names)
	return d.unmarked, nil
}

// forgetUnmarked records that session no longer has files (removed).
func (d *Dir) forgetUnmarked(session string) {
	d.unmarkedMu.Lock()
	defer d.unmarkedMu.Unlock()
	delete(d.unmarked, session)
}

// unmarkedIn returns the sessions among names with a generation,
// quarantined or temporary file and no marker.
func unmarkedIn(names []string) map[string]bool {
	out := make(map[string]bool)
	marked := make(map[string]bool)
	for _, name := range names {
		if s, ok := strings.CutSuffix(name, markerSuffix); ok {
			marked[s] = true
			continue
		}
		if s, ok := tempSession(name); ok {
			out[s] = true
			continue
		}
		if s, ok := sessionOf(name); ok {
			if _, kind := parseName(name, s); kind == kindGeneration || kind == kindCorrupt {
				out[s] = true
			}
		}
	}
	for s := range marked {
		delete(out, s)
	}
	return out
}

// tempSession returns the session of a temporary file's name,
// ".<session>.<digits>.tmp".
func tempSession(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	if rest, ok = strings.CutSuffix(rest, ".tmp"); !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 || i == len(rest)-1 || !allDigits(rest[i+1:]) || ValidateSession(rest[:i]) != nil {
		return "", false
	}
	return rest[:i], true
}

// forget sets s to what a listing of a session without files shows.
func (s *dirSession) forget() {
	s.gens = s.gens[:0]
	s.corrupt = s.corrupt[:0]
	s.scanned = true
}

// scanUnlessFresh is scan, which a fresh session (see fresh) needs not.
// It reports whether the session was fresh.
func (d *Dir) scanUnlessFresh(session string, s *dirSession) (bool, error) {
	fresh, err := d.fresh(session)
	if err != nil {
		return false, err
	}
	if fresh {
		s.forget()
		return true, nil
	}
	return false, d.scan(session, s)
}
