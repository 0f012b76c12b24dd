// Package jobqueue runs jobs from a queue and retries failed jobs.
package jobqueue

// Queue holds the jobs waiting to run; failed jobs are put back on the
// queue to be retried.
type Queue struct {
	jobs    []*Job
	retries int // jobs retried so far
	failed  int // jobs that failed so far
}

// Push adds a job to the queue; the queue runs jobs in order and retries
// failed jobs.
func (q *Queue) Push(j *Job) {
	q.jobs = append(q.jobs, j)
}

// Pop takes the next job off the queue, or nil when the queue is empty.
func (q *Queue) Pop() *Job {
	if len(q.jobs) == 0 {
		return nil
	}
	j := q.jobs[0]
	q.jobs = q.jobs[1:]
	return j
}

// Drain runs every job on the queue; a failed job is retried, and a job
// that failed too often goes to the dead letter queue.
func (q *Queue) Drain(run func(*Job) error) {
	for j := q.Pop(); j != nil; j = q.Pop() {
		if err := run(j); err != nil {
			q.failed++
			q.retryJob(j)
		}
	}
}
