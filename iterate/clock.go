package iterate

import "time"

// now returns the current time for measuring durations (with time.Since):
// read from the monotonic clock alone, as the run's start plus the time
// since, it costs one reading of the clock where time.Now costs two (the
// wall clock and the monotonic one). Its wall clock reading is derived,
// not read: do not show it.
func (c *iterClock) now() time.Time {
	if c.start.IsZero() {
		return time.Now() // not started: no monotonic reading to count from
	}
	return c.start.Add(time.Since(c.start))
}
