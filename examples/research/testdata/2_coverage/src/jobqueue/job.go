package jobqueue

import "time"

// Job is one unit of work of the queue: a job that failed is retried until
// its attempts run out.
type Job struct {
	Name     string
	attempts int       // how often the job failed
	notAfter time.Time // when the retried job may run again
}

// Attempts returns how often the job failed and was retried.
func (j *Job) Attempts() int { return j.attempts }

func describe(j *Job) string { return j.Name }

var _ = describe
