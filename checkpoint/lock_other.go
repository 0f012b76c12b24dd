//go:build !unix

package checkpoint

import (
	"errors"
	"io/fs"
	"os"
)

// readFlags: no flag here refuses a link; openGen checks the file's type
// after opening it.
const readFlags = 0

// errSymlink is the cause of the error for a lock file that is a symbolic
// link.
var errSymlink = errors.New("is a symbolic link, not followed")

// lockFile takes the lock by creating the file at path exclusively (mode
// 0600); unlockFile removes it. A crashed process leaves the file behind,
// and with it the lock: see Dir.Lock. A symbolic link at path is refused.
func lockFile(path, session string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "lock", Path: path, Err: errSymlink}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		var holder string
		if data, rerr := os.ReadFile(path); rerr == nil && len(data) <= lockFileMax {
			holder, _ = parseLock(data)
		}
		return nil, &LockedError{Session: session, Holder: holder}
	}
	return f, err
}

// unlockFile closes f and removes the lock file, if it is still f's.
func unlockFile(f *os.File, path string) error {
	held, herr := f.Stat()
	err := f.Close()
	if onDisk, lerr := os.Lstat(path); herr == nil && lerr == nil && os.SameFile(held, onDisk) {
		if rerr := os.Remove(path); err == nil {
			err = rerr
		}
	}
	return err
}

// syncDir does nothing: directories cannot be fsynced here.
func syncDir(dir string, fsync func(*os.File) error) error { return nil }
