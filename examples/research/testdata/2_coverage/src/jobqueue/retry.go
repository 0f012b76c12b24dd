package jobqueue

import "time"

// maxAttempts is how often a failed job is retried before it goes to the
// dead letter queue.
const maxAttempts = 3

// retryJob puts a failed job back on the queue after its backoff delay, or
// hands the job to the dead letter queue once it failed maxAttempts times.
func (q *Queue) retryJob(j *Job) {
	j.attempts++
	if j.attempts >= maxAttempts {
		q.deadLetter(j)
		return
	}
	j.notAfter = now().Add(backoffDelay(j.attempts))
	q.retries++
	q.Push(j)
}

func now() time.Time { return time.Now() }
