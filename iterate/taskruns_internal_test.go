package iterate

import (
	"strconv"
	"testing"

	"github.com/refine-go/refine/converge"
)

// TestRunSlabRecyclesOnlyWhatLeftTheWindow guards the recycling of the
// task runs' slabs (runSlab.recycle): a slice carved for iteration i is
// neither cleared nor carved again while the history's window may hold
// i's record (its oldest record's iteration is i or less), for windows of
// every size from 2 to 70 and several tasks per iteration; and a long run
// keeps a bounded number of slabs. Mutation caught: the condition on the oldest
// record weakened by one (last <= oldest), a slab used again without
// being cleared.
func TestRunSlabRecyclesOnlyWhatLeftTheWindow(t *testing.T) {
	for window := 2; window <= 70; window++ {
		for _, tasks := range []int{1, 2, 3, 7, 20} {
			s := runSlab{recycle: true}
			type carved struct {
				iter int
				runs []converge.TaskRun
			}
			var all []carved
			for iter := 1; iter <= 600; iter++ {
				// When iteration iter's runs are carved, the window holds the
				// records of iterations iter-window … iter-1 (0 is the
				// initial state's).
				oldest := max(iter-window, 0)
				runs := s.carve(tasks, iter, oldest)
				for i := range runs {
					if runs[i] != (converge.TaskRun{}) {
						t.Fatalf("window %d, %d tasks: iteration %d carved a task run not cleared: %+v", window, tasks, iter, runs[i])
					}
					runs[i].Target = strconv.Itoa(iter)
				}
				all = append(all, carved{iter, runs})
				// What the window still holds (and the Pending one) keeps its marker.
				for _, c := range all {
					if c.iter < oldest {
						continue
					}
					for i := range c.runs {
						if c.runs[i].Target != strconv.Itoa(c.iter) {
							t.Fatalf("window %d, %d tasks: at iteration %d, iteration %d's task run changed: %+v", window, tasks, iter, c.iter, c.runs[i])
						}
					}
				}
				if len(all) > window+2 {
					all = all[1:]
				}
			}
			if n := len(s.used); n > window/2+3 {
				t.Errorf("window %d, %d tasks: %d slabs waiting, for a window of %d", window, tasks, n, window)
			}
		}
	}
}
