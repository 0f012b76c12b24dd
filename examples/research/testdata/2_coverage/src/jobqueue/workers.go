package jobqueue

import "sync"

// pool starts n workers that drain the queue; a job that fails in a
// worker is retried by the queue.
func pool(q *Queue, n int, run func(*Job) error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			q.Drain(run)
		}()
	}
	wg.Wait()
}

var _ = pool
