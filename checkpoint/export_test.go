package checkpoint

// SetSaveHook makes d call hook at each stage of a save ("write", "sync",
// "publish"); an error it returns fails the save there. Tests only.
func SetSaveHook(d *Dir, hook func(stage string) error) { d.hook = hook }
