package converge

import (
	"slices"
	"strconv"
	"strings"
)

// defaultRepeatAfter is Repeating's default After.
const defaultRepeatAfter = 3

// Repeating halts a loop that thrashes: its last After iterations (default
// 3) did the same actions — the same non-empty set of fingerprints the
// host reported (Attempt.Actions: tool calls, commands, files changed) —
// while nothing improved: the latest state's score, coverage and
// confidence are no higher, and its gaps no fewer, than those of the state
// before the repetition began. Verdict Stuck, with the repeated actions
// named: "stuck: the same actions for 3 iterations without improvement:
// edit main.go, run go test ./...".
//
// Iterations that reported no actions never repeat. A zero After selects
// the default. Repeating is a plain value, safe for concurrent use; add it
// to a policy of [Any] (it is not part of [Default]).
type Repeating struct {
	After int `json:"after,omitempty"`
}

// Validate returns an error matching [ErrInvalidPolicy] when After is
// negative or the default window cannot hold the records it compares.
func (p Repeating) Validate() error { return p.validateWindow(DefaultWindow) }

func (p Repeating) validateWindow(window int) error {
	if err := checkCount("Repeating", "After", p.After); err != nil {
		return err
	}
	if n := countOr(p.After, defaultRepeatAfter); n+1 > window {
		return invalid("Repeating", "After", "needs "+strconv.Itoa(n+1)+" records, more than the history window ("+strconv.Itoa(window)+")")
	}
	return nil
}

// Decide returns Stuck when the same actions repeated without improvement.
func (p Repeating) Decide(h *History) Decision {
	if h == nil {
		return Decision{}
	}
	after := countOr(p.After, defaultRepeatAfter)
	recs := h.Recent
	if after < 1 || len(recs) < after+1 {
		return Decision{}
	}
	last := &recs[len(recs)-1]
	if len(last.Actions) == 0 {
		return Decision{}
	}
	for i := len(recs) - after; i < len(recs)-1; i++ {
		if !slices.Equal(recs[i].Actions, last.Actions) {
			return Decision{}
		}
	}
	if before := &recs[len(recs)-after-1]; improved(before, last) {
		return Decision{}
	}
	names := last.Actions
	more := ""
	if len(names) > 5 {
		names, more = names[:5], " and "+strconv.Itoa(len(last.Actions)-5)+" more"
	}
	return Decision{Verdict: Stuck, Reason: "stuck: the same actions for " + plural(after, "iteration") +
		" without improvement: " + strings.Join(names, ", ") + more}
}

// improved reports whether the state of b is better than that of a by any
// measure: a higher score, coverage or confidence, or fewer gaps.
func improved(a, b *Record) bool {
	return b.Score > a.Score || b.Coverage > a.Coverage || b.Confidence > a.Confidence || b.Gaps < a.Gaps
}
