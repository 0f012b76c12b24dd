package checkpoint

import "os"

// SetSaveHook makes d call hook at each stage of a save ("write", "sync",
// "publish", "index", "indexed"; "index" also before any other write of
// an index); an error it returns fails the save there. Tests only.
func SetSaveHook(d *Dir, hook func(stage string) error) { d.hook = hook }

// SetSync makes d call sync in place of f.Sync for every fsync of a file or
// of the directory. Tests only.
func SetSync(d *Dir, sync func(f *os.File) error) { d.sync = sync }

// RaceEnabled is raceEnabled, for the tests of package checkpoint_test.
const RaceEnabled = raceEnabled

// SetOnList makes d call f at each listing of its directory. Tests only.
func SetOnList(d *Dir, f func()) { d.onList = f }

// SetNoIndex makes d neither read nor write the sessions' indexes: every
// read of a session lists the directory, as before indexes. Tests only.
func SetNoIndex(d *Dir) { d.noIndex = true }

// ReadIndex reads the index in the marker of session, as it is on disk,
// without looking for generations by name. Tests only.
func ReadIndex(d *Dir, session string) ([]uint64, []quarantined, error) {
	return d.readIndex(session)
}

// SetCompaction makes d rewrite the snapshot of the sessions journal when
// the journal runs after bytes past it, checked by a writer every check
// bytes, in place of 64 KiB and 16 KiB. Tests only.
func SetCompaction(d *Dir, after, check int64) { d.compactAt, d.compactEvery = after, check }

// SnapshotOffset returns the journal offset the snapshot of the sessions
// journal covers; false if there is none. Tests only.
func SnapshotOffset(d *Dir) (int64, bool) { return d.snapshotOffset() }
