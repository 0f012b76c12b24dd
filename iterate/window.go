package iterate

// window keeps the most recent n values of a series in constant space. It
// slides over a backing array of 2n values, so that dropping the oldest
// value is a reslice and the values move only once every n pushes: no
// per-push copying of the whole window, no allocation in the steady state.
type window[T any] struct {
	vals []T // the window, oldest first
	base []T // the backing array vals slides over
	n    int
	// pushed counts the values ever pushed: the i-th of vals is the
	// (pushed-len(vals)+i)-th, a key that a cache of encodings can use.
	pushed int
}

func newWindow[T any](n int) window[T] { return window[T]{n: n} }

// push appends v, dropping the oldest value when the window is full.
func (w *window[T]) push(v T) {
	if len(w.vals) >= w.n {
		var zero T
		w.vals[0] = zero // release what the dropped value refers to
		w.vals = w.vals[1:]
	}
	if len(w.vals) == cap(w.vals) {
		size := 2 * w.n
		if n := 2 * len(w.vals); n < w.n {
			// Still filling: grow as append would, so that a short loop
			// does not pay for a whole window up front.
			size = max(n, 4)
		}
		if cap(w.base) < size {
			w.base = make([]T, 0, size)
		}
		k := copy(w.base[:cap(w.base)], w.vals)
		clear(w.base[k:cap(w.base)])
		w.vals = w.base[:k]
	}
	w.vals = append(w.vals, v)
	w.pushed++
}

// set replaces the window's values with the last n of vs (copied); they
// count as pushed.
func (w *window[T]) set(vs []T) {
	w.vals = w.vals[:0]
	if len(vs) > w.n {
		vs = vs[len(vs)-w.n:]
	}
	for _, v := range vs {
		w.push(v)
	}
}

// values returns the window, oldest first; valid until the next push.
func (w *window[T]) values() []T { return w.vals }
