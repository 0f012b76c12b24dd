package iteratetest

import (
	"context"
	"errors"
	"fmt"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// Row is one row of a decision table: the assessment of the state after
// the rows before it, and whether the tasks of the iteration planned on it
// fail.
type Row struct {
	Assessment gap.Assessment
	Fail       bool
}

// Decision is what a loop made of one row of a table: the gaps its gap
// analysis found, its convergence decision (the engine's limits included),
// and the strategy's plan — nil when the decision stopped the loop. A plan
// phrasing an escalation the policy decided has Action Escalate.
type Decision struct {
	Gaps     []gap.Gap
	Decision converge.Decision
	Plan     *iterate.Plan
}

// errEndOfTable ends a table's loop after its last row.
var errEndOfTable = iterate.Permanent(errors.New("iteratetest: end of the table"))

// errRowFailed is the error of the tasks of a row marked Fail.
var errRowFailed = errors.New("iteratetest: the row's tasks fail")

// Table runs rows through a real loop, as the seeds' decision tables read:
// with no worker of the host's and no model, the loop assesses row k after
// k iterations, analyses it, decides and plans under opts (the host's own:
// WithConvergence, WithStrategy, WithThresholds, WithMaxIterations,
// WithFailureThreshold, ...), runs the planned tasks — which fail when
// the row says Fail — and goes on to the next row. It returns what the
// loop made of each row, in order, with the engine's own enforcement of
// the iteration limit and the failure threshold, exactly as a loop of the
// host's would decide.
//
// The loop must stop on the last row or go on past it: a stop on an
// earlier row is an error naming it, with the decisions up to it. An
// invalid option is the engine's *iterate.ConfigError.
func Table(rows []Row, opts ...iterate.Option) ([]Decision, error) {
	if len(rows) == 0 {
		return nil, errors.New("iteratetest: a table needs at least one row")
	}
	steps := make([]Step, len(rows)+1)
	for i, r := range rows {
		steps[i].Assessment = r.Assessment
		if r.Fail {
			steps[i].Err = errRowFailed
		}
	}
	steps[len(rows)].AssessErr = errEndOfTable
	out := make([]Decision, 0, len(rows))
	row := func(e iterate.Event) *Decision {
		for len(out) < e.Iteration() {
			out = append(out, Decision{})
		}
		return &out[e.Iteration()-1]
	}
	observe := func(e iterate.Event) {
		if e.Iteration() < 1 || e.Iteration() > len(rows) {
			return
		}
		switch e := e.(type) {
		case iterate.GapsFound:
			row(e).Gaps = e.Gaps
		case iterate.Decided:
			row(e).Decision = e.Decision
		case iterate.Planned:
			p := e.Plan
			row(e).Plan = &p
		}
	}
	eng := iterate.New(&Script{Steps: steps}, append(opts[:len(opts):len(opts)], iterate.WithObserver(observe))...)
	_, err := eng.Run(context.Background(), State{})
	if ce := (*iterate.ConfigError)(nil); errors.As(err, &ce) {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("iteratetest: the loop decided nothing: %w", err)
	}
	if n := len(out); n < len(rows) {
		d := out[n-1].Decision
		return out, fmt.Errorf("iteratetest: the loop stopped on row %d of %d (%s: %s)", n, len(rows), d.Verdict, d.Reason)
	}
	return out, nil
}
