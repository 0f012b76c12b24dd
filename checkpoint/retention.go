package checkpoint

// This file decides which generations of a session a store keeps.

// KeepAll makes a [Dir] keep every generation of a session (a session's
// whole history, which [Dir.Generations] lists and [Dir.LoadGeneration]
// loads), subject only to [MaxBytes]. Keep is then ignored.
func KeepAll() DirOption { return dirOptionFunc(func(d *Dir) { d.retain.all = true }) }

// KeepBest makes a [Dir] keep, beside the newest generations, the
// generation that the newest one names as holding the best state
// ([Checkpoint.BestGeneration]): pruning never removes it, whatever Keep
// and [MaxBytes] say. A generation that is no longer the best is pruned as
// any other.
func KeepBest() DirOption { return dirOptionFunc(func(d *Dir) { d.retain.best = true }) }

// MaxBytes bounds the size of a session's generations in a [Dir]: after a
// save, the oldest generations are pruned until the session's generation
// files (quarantined ones not counted) add up to at most n bytes, never the
// newest generation, and never the best under [KeepBest]. It applies with
// Keep and with [KeepAll]. n <= 0 means no limit, the default.
func MaxBytes(n int64) DirOption {
	return dirOptionFunc(func(d *Dir) { d.retain.maxBytes = max(n, 0) })
}

type dirOptionFunc func(*Dir)

func (f dirOptionFunc) applyDir(d *Dir) { f(d) }

// retention is which generations of a session a store keeps, beyond the
// newest Keep: all of them, the best one, within a size.
type retention struct {
	all      bool
	best     bool
	maxBytes int64
}

// plain reports whether r is the default: the newest Keep and nothing more.
func (r retention) plain() bool { return r == retention{} }

// drop marks which of a session's generations gens (ascending, the newest
// last, just saved) to prune under r with keep, given the generation the
// newest names as best; size(i) is the size of gens[i], asked for only
// under a size limit. The newest generation is never dropped, nor, under
// best, the best one.
func (r retention) drop(gens []uint64, keep int, best uint64, size func(i int) int64) []bool {
	n := len(gens)
	out := make([]bool, n)
	protected := func(i int) bool { return i == n-1 || (r.best && best != 0 && gens[i] == best) }
	if !r.all {
		for i := 0; i < n-keep; i++ {
			out[i] = !protected(i)
		}
	}
	if r.maxBytes > 0 {
		var total int64
		for i := range gens {
			if !out[i] {
				total += size(i)
			}
		}
		for i := 0; i < n && total > r.maxBytes; i++ {
			if !out[i] && !protected(i) {
				out[i] = true
				total -= size(i)
			}
		}
	}
	return out
}
