package view

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/refine-go/refine/checkpoint"
)

// Whether a process holds a session, as the pages tell it.
const (
	held    = "held"   // a loop (or a fleet's worker) holds it now
	unheld  = "unheld" // nothing holds it: a running status is stale
	unknown = ""       // the store does not tell
)

// holding tells whether a process holds session now: of a fleet, by its
// lease's holder (extra, when the host tells extras); of a directory, by
// its lock file (see dirHolder); of another store it is not known.
func (h *Handler) holding(session string, extra Extra, extras bool) string {
	if extras {
		if extra.Holder != "" {
			return held
		}
		return unheld
	}
	var d *checkpoint.Dir
	switch s := h.store.(type) {
	case readOnly:
		d, _ = s.GenerationStore.(*checkpoint.Dir)
	case *checkpoint.Dir:
		d = s
	}
	if d == nil {
		return unknown
	}
	return dirHolder(d, session)
}

// maxLockFile bounds what is read of a lock file.
const maxLockFile = 4096

// dirHolder tells whether a process holds session's lock in d, without
// taking it (a lock taken, even shared and for a moment, would make a
// loop starting then fail): checkpoint.Dir's Lock writes "pid N" in the
// session's lock file while it holds it and removes the line on release,
// so a lock file naming a process that is gone is the lock of a loop
// killed while it ran (the kernel released its lock). The process is
// looked for on this host (a viewer of a directory shared with other
// hosts cannot tell: it says held); a process id reused since is taken
// for the holder.
func dirHolder(d *checkpoint.Dir, session string) string {
	dir := d.Path()
	if dir == "" {
		dir = "."
	}
	path := filepath.Join(dir, session+".lock")
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return unheld
	}
	f, err := os.Open(path)
	if err != nil {
		return unknown
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLockFile))
	if err != nil {
		return unknown
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "pid "); ok {
			pid, err := strconv.Atoi(v)
			if err != nil || pid <= 0 {
				return unknown
			}
			if processGone(pid) {
				return unheld
			}
			return held
		}
	}
	return unheld
}
