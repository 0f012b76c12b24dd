package jobqueue

import "fmt"

// Stats reports how many jobs the queue retried and how many failed.
func (q *Queue) Stats() string {
	return fmt.Sprintf("%d retried, %d failed", q.retries, q.failed)
}

func report(q *Queue) string { return q.Stats() }

var _ = report
