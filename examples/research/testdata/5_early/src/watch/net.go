package watch

// linkUp reports a link that came up to the watcher.
func linkUp(w *Watcher) {
	w.Notify("link up")
}

// linkDown reports a link that went down, once for the watcher and once
// for the log.
func linkDown(w *Watcher) {
	w.Notify("link down")
	if w != nil {
		w.Notify("logged: link down")
	}
}

var _, _ = linkUp, linkDown
