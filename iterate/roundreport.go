package iterate

import (
	"slices"

	"github.com/refine-go/refine/budget"
)

// Reported returns what the round has reported so far: the usage its
// Charge calls added up, whether it called Done, its latest Output and the
// actions of its Did calls (a copy). It is for code that wraps a [Func]'s
// step and needs what the step reported, such as a recorder of its
// outcomes (iteratetest.Cassette): call it after the step returns, with the
// same Round. A Round made outside a loop reports nothing.
func (r Round) Reported() (usage budget.Usage, done bool, output string, actions []string) {
	if r.usage != nil {
		usage = *r.usage
	}
	if r.done != nil {
		done = *r.done
	}
	if r.output != nil {
		output = *r.output
	}
	if r.actions != nil {
		actions = slices.Clone(*r.actions)
	}
	return usage, done, output, actions
}
