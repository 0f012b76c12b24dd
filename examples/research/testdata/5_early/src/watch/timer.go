package watch

import "time"

// tick reports the time to the watcher, every period.
func tick(w *Watcher, period time.Duration, n int) {
	for i := 0; i < n; i++ {
		time.Sleep(period)
		w.Notify("tick")
	}
	w.Notify("stopped")
}

var _ = tick
