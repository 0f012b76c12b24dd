package main

// The synthetic kind of loop: deterministic, so that a session run across
// kills, takeovers and graceful stops can be compared with an
// uninterrupted run in one process (see fleet_test.go). It has several
// iterations of 2 to 4 parallel tasks, one of which fails now and then;
// the fleet runs it with the task journal, as every kind.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// syntheticArgs are a synthetic session's arguments.
type syntheticArgs struct {
	// Name seeds the state's digest, so that every session ends somewhere
	// else (the session's name, by convention).
	Name       string `json:"name"`
	Iterations int    `json:"iterations"`
	// TaskMillis is how long each task takes (it waits, cancellably).
	TaskMillis int `json:"task_ms"`
	// EscalateAt, when set, makes the session ask a question after that
	// many iterations, until it is answered.
	EscalateAt int `json:"escalate_at,omitempty"`
}

// state is the loop's state: the iterations integrated, a digest of every
// outcome in task order, one short line per task, and the answer to its
// question, if it asked one.
type state struct {
	Round  int      `json:"round"`
	Sum    string   `json:"sum"`
	Log    []string `json:"log,omitempty"`
	Answer string   `json:"answer,omitempty"`
}

func hash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// initial is the state a session starts from: its digest is seeded by the
// session's name, so that every session ends somewhere else.
func initial(a syntheticArgs) state { return state{Sum: hash(a.Name)} }

// plan is iteration n's plan: 2 to 4 parallel tasks, each with its own gap.
func plan(n int) iterate.Plan {
	tasks := make([]iterate.Task, 2+n%3)
	for i := range tasks {
		role := iterate.RoleExplore
		if i%2 == 1 {
			role = iterate.RoleVerify
		}
		tasks[i] = iterate.Task{Role: role, Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: fmt.Sprintf("item-%d-%d", n, i)}}}
	}
	return iterate.Plan{Action: iterate.Refine, Tasks: tasks}
}

// fails reports whether task idx of iteration it fails (task 0 never does,
// so no iteration fails as a whole).
func fails(it, idx int) bool { return idx > 0 && (it*7+idx*3)%5 == 0 }

// taskUsage is what task idx of iteration it spends, failing or not.
func taskUsage(it, idx int) budget.Usage {
	return budget.Usage{Tokens: int64(1000*it + 10*idx + 7), Calls: 1}
}

func taskID(it, idx int) string { return strconv.Itoa(it) + "." + strconv.Itoa(idx+1) }

// part is what a task finds, from the state it was given and the answer
// its task carries.
func part(s state, it, idx int, answer string) state {
	id := taskID(it, idx)
	d := hash(s.Sum, id, answer)
	return state{Sum: d, Log: []string{id + "=" + d[:16]}, Answer: answer}
}

// integrate folds the outcomes, in task order, into the state.
func integrate(s state, outs []iterate.Outcome[state]) state {
	next := state{Round: s.Round + 1, Sum: s.Sum, Log: append([]string(nil), s.Log...), Answer: s.Answer}
	for i := range outs {
		id := taskID(outs[i].Task.Iteration, outs[i].Task.Index)
		if outs[i].Err != nil {
			next.Log = append(next.Log, id+"!")
			next.Sum = hash(next.Sum, id+"!")
			continue
		}
		if outs[i].Part.Answer != "" {
			next.Answer = outs[i].Part.Answer
		}
		next.Log = append(next.Log, outs[i].Part.Log...)
		next.Sum = hash(next.Sum, outs[i].Part.Sum)
	}
	return next
}

// model is the state after n iterations of a session that asks no
// question, computed without the engine.
func model(a syntheticArgs, n int) state {
	s := initial(a)
	for it := 1; it <= n; it++ {
		p := plan(it)
		outs := make([]iterate.Outcome[state], len(p.Tasks))
		for i := range outs {
			outs[i].Task = iterate.Task{Iteration: it, Index: i}
			if fails(it, i) {
				outs[i].Err = errors.New("fails")
			} else {
				outs[i].Part = part(s, it, i, "")
			}
		}
		s = integrate(s, outs)
	}
	return s
}

// recorder notes what a worker executes, for the fleet's accounting (see
// ledger.go); nil records nothing. It never fails the loop: a loop's
// counters must not depend on the ledger.
type recorder interface {
	task(ctx context.Context, it, idx int)
	integrated(ctx context.Context, it int)
}

// worker is the loop's iterate.Worker.
type worker struct {
	a   syntheticArgs
	rec recorder
}

func (w *worker) Assess(_ context.Context, s state) (gap.Assessment, error) {
	return gap.Assessment{
		WorkRemaining: []string{fmt.Sprintf("%d of %d", s.Round, w.a.Iterations)}, // changes: never stuck
		Complete:      s.Round >= w.a.Iterations,
	}, nil
}

func (w *worker) Work(ctx context.Context, s state, t iterate.Task) (iterate.Outcome[state], error) {
	if w.a.TaskMillis > 0 {
		// Tasks take a little longer or shorter, so that they finish in
		// varying orders.
		d := time.Duration(w.a.TaskMillis)*time.Millisecond + time.Duration(t.Index*37%11)*time.Millisecond
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return iterate.Outcome[state]{}, context.Cause(ctx)
		}
	}
	out := iterate.Outcome[state]{Part: part(s, t.Iteration, t.Index, t.Answer), Usage: taskUsage(t.Iteration, t.Index)}
	if w.rec != nil {
		w.rec.task(ctx, t.Iteration, t.Index)
	}
	if fails(t.Iteration, t.Index) {
		return out, fmt.Errorf("task %s: scripted failure", taskID(t.Iteration, t.Index))
	}
	return out, nil
}

func (w *worker) Integrate(ctx context.Context, s state, outs []iterate.Outcome[state]) (state, error) {
	next := integrate(s, outs)
	if w.rec != nil {
		w.rec.integrated(ctx, next.Round)
	}
	return next, nil
}

// syntheticKind returns the build function of the synthetic kind: the
// loop of a session from its arguments, recording what it executes with
// rec (nil: nothing). Every process of the fleet registers it alike.
func syntheticKind(rec recorder) func(context.Context, syntheticArgs) (fleet.Loop[state], error) {
	return func(_ context.Context, a syntheticArgs) (fleet.Loop[state], error) {
		if a.Iterations < 1 || a.TaskMillis < 0 || a.EscalateAt < 0 {
			return fleet.Loop[state]{}, fmt.Errorf("synthetic: bad arguments %+v", a)
		}
		return syntheticLoop(a, rec), nil
	}
}

// syntheticLoop is a session's loop: its worker, its strategy (the plan
// of each iteration, or a question after EscalateAt iterations until it is
// answered) and its iteration limit.
func syntheticLoop(a syntheticArgs, rec recorder) fleet.Loop[state] {
	return fleet.Loop[state]{
		Worker: &worker{a: a, rec: rec},
		Options: []iterate.Option{
			iterate.WithStrategy(iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
				if a.EscalateAt > 0 && sit.AnsweredAt == 0 && sit.History.Iteration >= a.EscalateAt {
					return iterate.Plan{Action: iterate.Escalate, Escalation: &iterate.Escalation{
						Reason: "scripted", Question: "which way, " + a.Name + "?"}}, nil
				}
				return plan(sit.Iteration), nil
			})),
			iterate.WithMaxIterations(a.Iterations + 1),
		},
		Initial: initial(a),
	}
}

// summary is what a finished session is compared on: the final state,
// status and counters (usage without wall time).
type summary struct {
	State      state
	Status     iterate.Status
	Reason     string
	Iterations int
	Usage      budget.Usage
	Totals     iterate.Totals
}

func summarize(res *iterate.Result[state]) summary {
	u := res.Usage
	u.Wall = 0
	t := res.Totals
	t.Duration = 0
	return summary{State: res.State, Status: res.Status, Reason: res.Reason, Iterations: res.Iterations, Usage: u, Totals: t}
}
