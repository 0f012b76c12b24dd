package jobqueue

// deadLetters keeps the jobs that failed too often to be retried: the dead
// letter queue.
var deadLetters []*Job

// deadLetter moves a job that failed maxAttempts times to the dead letter
// queue instead of retrying it.
func (q *Queue) deadLetter(j *Job) {
	deadLetters = append(deadLetters, j)
}

// DeadJobs returns the jobs of the dead letter queue: every job that failed
// too often to be retried.
func DeadJobs() []*Job { return deadLetters }

var _ = DeadJobs
