package checkpoint

import "os"

// SetSaveHook makes d call hook at each stage of a save ("write", "sync",
// "publish"); an error it returns fails the save there. Tests only.
func SetSaveHook(d *Dir, hook func(stage string) error) { d.hook = hook }

// SetSync makes d call sync in place of f.Sync for every fsync of a file or
// of the directory. Tests only.
func SetSync(d *Dir, sync func(f *os.File) error) { d.sync = sync }

// RaceEnabled is raceEnabled, for the tests of package checkpoint_test.
const RaceEnabled = raceEnabled

// SetOnList makes d call f at each listing of its directory. Tests only.
func SetOnList(d *Dir, f func()) { d.onList = f }
