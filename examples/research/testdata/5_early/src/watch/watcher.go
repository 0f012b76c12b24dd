// Package watch sends events to the functions registered with a watcher.
package watch

// Watcher holds the subscribers of a source of events.
type Watcher struct {
	subs []func(string)
}

// Subscribe adds a function to call on every event.
func (w *Watcher) Subscribe(f func(string)) {
	w.subs = append(w.subs, f)
}

// Notify calls every subscriber with the event.
func (w *Watcher) Notify(event string) {
	for _, f := range w.subs {
		f(event)
	}
}

// NewWatcher returns an empty watcher.
func NewWatcher() *Watcher { return &Watcher{} }
