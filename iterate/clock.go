package iterate

import "time"

// clockBase is the origin of readings taken before a run's clock started
// (see since).
var clockBase = time.Now()

// since returns the time elapsed since the run started, for measuring a
// task's duration as the difference of two readings: one reading of the
// monotonic clock, and a Duration rather than a Time to carry (time.Now
// reads two clocks, and a Time derived from the start costs an addition
// on every reading).
func (c *iterClock) since() time.Duration {
	if c.start.IsZero() {
		return time.Since(clockBase) // not started: any fixed origin will do
	}
	return time.Since(c.start)
}
