package jobqueue

import "time"

// backoffDelay is how long a job waits after its nth failure before it is
// retried: the backoff doubles with every attempt.
func backoffDelay(attempt int) time.Duration {
	d := 100 * time.Millisecond
	for i := 1; i < attempt; i++ {
		d *= 2
	}
	return d
}
