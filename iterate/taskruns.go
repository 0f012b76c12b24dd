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
//
// When no host code can have kept a record (see run.configureRecycling), a
// slab is used again, cleared, once every record carved from it has left
// the history's window: the records a host can see, the Result's, still
// own their memory, and a long loop allocates no task runs.
type runSlab struct {
	free []converge.TaskRun // not yet carved
	size int                // the length of the latest slab

	recycle bool
	cur     []converge.TaskRun // the latest slab, whole (when recycling)
	curLast int                // the iteration whose record was last carved from cur
	used    []usedSlab         // earlier slabs, oldest first, until their records leave the window
}

// usedSlab is a slab wholly carved, and the last iteration whose record
// was carved from it.
type usedSlab struct {
	runs []converge.TaskRun
	last int
}

// runSlabMax bounds a slab's length. Slabs grow from the first
// iteration's tasks to it, doubling, so that a short run allocates no
// more than it would with a slice per iteration.
const runSlabMax = 64

// carve returns a new slice of n zero task runs, n > 0, for the record of
// iteration iter; oldest is the iteration of the oldest record in the
// history's window (only read when recycling).
func (s *runSlab) carve(n, iter, oldest int) []converge.TaskRun {
	if n > len(s.free) {
		if n > runSlabMax/2 {
			// Many tasks: a slab would save nothing.
			return make([]converge.TaskRun, n)
		}
		s.size = min(max(2*s.size, n), runSlabMax)
		s.free = s.next(oldest)
	}
	runs := s.free[:n:n]
	s.free = s.free[n:]
	s.curLast = iter
	return runs
}

// next returns a slab of s.size zero task runs: a used one whose records
// all left the window, cleared, when recycling, or a new one.
func (s *runSlab) next(oldest int) []converge.TaskRun {
	if !s.recycle {
		return make([]converge.TaskRun, s.size)
	}
	if s.cur != nil {
		s.used = append(s.used, usedSlab{runs: s.cur, last: s.curLast})
	}
	for len(s.used) > 0 && s.used[0].last < oldest {
		// Every record carved from the oldest slab left the window.
		runs := s.used[0].runs
		copy(s.used, s.used[1:])
		s.used[len(s.used)-1] = usedSlab{}
		s.used = s.used[:len(s.used)-1]
		if len(runs) == s.size {
			clear(runs)
			s.cur = runs
			return runs
		}
		// A smaller slab of the run's first iterations: left to the GC.
	}
	s.cur = make([]converge.TaskRun, s.size)
	return s.cur
}
