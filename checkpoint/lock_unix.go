//go:build unix

package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// readFlags are added to the flags of every file Dir opens that may have
// been planted: a symbolic link is not followed, and a FIFO does not block
// the open.
const readFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// errSymlink is the cause of the error for a lock file that is a symbolic
// link.
var errSymlink = errors.New("is a symbolic link, not followed")

// errHardLink is the cause of the error for a lock file with more than one
// link: another name, perhaps outside the directory, for the same file.
var errHardLink = errors.New("has other hard links, not written")

// lockFile takes an exclusive flock on the file at path, creating it (mode
// 0600) if need be. It never follows a symbolic link, never truncates, and
// refuses a file that is not a regular one or that has other hard links
// (which writing the token would change too). The kernel releases the lock
// when the process dies. flock locks belong to the open file description,
// so a second lockFile of the same path fails even within one process.
func lockFile(path, session string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|readFlags, 0o600)
	if err != nil {
		// O_NOFOLLOW fails with ELOOP on Linux, other errors elsewhere.
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &fs.PathError{Op: "lock", Path: path, Err: errSymlink}
		}
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = &fs.PathError{Op: "lock", Path: path, Err: errNotRegular}
	case links(fi) > 1:
		err = &fs.PathError{Op: "lock", Path: path, Err: errHardLink}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		var holder string
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if data, rerr := readSmall(f); rerr == nil {
				holder, _ = parseLock(data)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Session: session, Holder: holder}
		}
		return nil, &fs.PathError{Op: "flock", Path: path, Err: err}
	}
	return f, nil
}

// links returns the number of hard links of the file fi describes.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// unlockFile releases the lock held through f: closing the file does.
func unlockFile(f *os.File, path string) error { return f.Close() }

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// syncDir fsyncs the directory, with fsync, so that the names just created
// in it are durable. File systems that cannot sync a directory answer EINVAL or
// ENOTSUP; there is nothing more to do on them, so those are not errors.
func syncDir(dir string, fsync func(*os.File) error) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fsync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}
