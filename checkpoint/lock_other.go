//go:build !unix

package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"sync"
)

// lockFile takes the lock by creating the file at path exclusively, writing
// the holder's pid into it; release removes it. A crashed process leaves the
// file behind, and with it the lock: see Dir.Lock.
func lockFile(path, session string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		data, _ := os.ReadFile(path)
		return nil, &LockedError{Session: session, Holder: holderOf(data)}
	}
	if err != nil {
		return nil, err
	}
	_, werr := f.Write(lockContents())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return nil, werr
	}
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() { rerr = os.Remove(path) })
		return rerr
	}, nil
}

// syncDir does nothing: directories cannot be fsynced here.
func syncDir(dir string) error { return nil }
