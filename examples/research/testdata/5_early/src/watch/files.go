package watch

// fileChanged reports a changed file to the watcher.
func fileChanged(w *Watcher, name string) {
	w.Notify("changed " + name)
}

// fileRemoved reports a removed file to the watcher.
func fileRemoved(w *Watcher, name string) {
	w.Notify("removed " + name)
}

func setup() *Watcher {
	w := NewWatcher()
	w.Subscribe(func(string) {})
	fileChanged(w, "a")
	fileRemoved(w, "a")
	return w
}

var _ = setup
