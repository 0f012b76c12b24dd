//go:build unix

package checkpoint

import (
	"errors"
	"os"
	"sync"
	"syscall"
)

// lockFile takes an exclusive flock on the file at path, creating it if need
// be, and writes the holder's pid into it. The kernel releases the lock when
// the process dies. flock locks belong to the open file description, so a
// second lockFile of the same path fails even within one process.
func lockFile(path, session string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		var holder string
		if errors.Is(err, syscall.EWOULDBLOCK) {
			buf := make([]byte, 64)
			n, _ := f.ReadAt(buf, 0)
			holder = holderOf(buf[:n])
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Session: session, Holder: holder}
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	// For diagnostics only: the flock, not the contents, is the lock.
	if err := f.Truncate(0); err == nil {
		f.WriteAt(lockContents(), 0)
	}
	var once sync.Once
	var cerr error
	return func() error {
		once.Do(func() {
			f.Truncate(0) // no holder any more; the file stays (see Dir.Lock)
			cerr = f.Close()
		})
		return cerr
	}, nil
}

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

// syncDir fsyncs the directory so that the names just created in it are
// durable. File systems that cannot sync a directory answer EINVAL or
// ENOTSUP; there is nothing more to do on them, so those are not errors.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}
