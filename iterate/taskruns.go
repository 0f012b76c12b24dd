package iterate

import "github.com/refine-go/refine/converge"

// runSlab hands out the task-run slices of a run's records: each is carved
// from a slab allocated once every few iterations, rather than allocated
// per iteration.
//
// A carved slice is capped at its own length (a full slice expression), and
// the slab never hands out the same element twice nor writes one after
// carving it, so that no record shares storage with another, nor with
// anything the engine writes later: a record read by a policy, a strategy
// or an observer, or a Result's History, never changes. The price is that
// a slab stays alive while any record carved from it does (at most
// runSlabMax task runs, 6 KiB, besides the output tails they refer to).
type runSlab struct {
	free []converge.TaskRun // not yet carved
	size int                // the length of the latest slab
}

// runSlabMax bounds a slab's length. Slabs grow from the first
// iteration's tasks to it, doubling, so that a short run allocates no
// more than it would with a slice per iteration.
const runSlabMax = 64

// carve returns a new slice of n zero task runs, n > 0.
func (s *runSlab) carve(n int) []converge.TaskRun {
	if n > len(s.free) {
		if n > runSlabMax/2 {
			// Many tasks: a slab would save nothing.
			return make([]converge.TaskRun, n)
		}
		s.size = min(max(2*s.size, n), runSlabMax)
		s.free = make([]converge.TaskRun, s.size)
	}
	runs := s.free[:n:n]
	s.free = s.free[n:]
	return runs
}
