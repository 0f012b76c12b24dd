package main

// The synthetic loop every session of the fleet runs: deterministic, so
// that a session run across kills, takeovers and graceful stops can be
// compared with an uninterrupted run in one process (see fleet_test.go).
// It has several iterations of 2 to 4 parallel tasks, one of which fails
// now and then, and the task journal is on.

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
)

// spec is what a job asks for: the session and the shape of its loop. It is
// River's job args (kind "refine_session"); uniqueness is by session only.
type spec struct {
	Session    string `json:"session" river:"unique"`
	Question   string `json:"question,omitempty"`
	Iterations int    `json:"iterations"`
	// TaskMillis is how long each task takes (it waits, cancellably).
	TaskMillis int `json:"task_ms"`
}

// state is the loop's state: the iterations integrated, a digest of every
// outcome in task order, and one short line per task.
type state struct {
	Question string   `json:"question,omitempty"`
	Round    int      `json:"round"`
	Sum      string   `json:"sum"`
	Log      []string `json:"log,omitempty"`
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
func initial(sp spec) state { return state{Question: sp.Question, Sum: hash(sp.Session)} }

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

// part is what a task finds, from the state it was given.
func part(s state, it, idx int) state {
	id := taskID(it, idx)
	d := hash(s.Sum, id)
	return state{Sum: d, Log: []string{id + "=" + d[:16]}}
}

// integrate folds the outcomes, in task order, into the state.
func integrate(s state, outs []iterate.Outcome[state]) state {
	next := state{Question: s.Question, Round: s.Round + 1, Sum: s.Sum, Log: append([]string(nil), s.Log...)}
	for i := range outs {
		id := taskID(outs[i].Task.Iteration, outs[i].Task.Index)
		if outs[i].Err != nil {
			next.Log = append(next.Log, id+"!")
			next.Sum = hash(next.Sum, id+"!")
			continue
		}
		next.Log = append(next.Log, outs[i].Part.Log...)
		next.Sum = hash(next.Sum, outs[i].Part.Sum)
	}
	return next
}

// model is the state after n iterations, computed without the engine.
func model(sp spec, n int) state {
	s := initial(sp)
	for it := 1; it <= n; it++ {
		p := plan(it)
		outs := make([]iterate.Outcome[state], len(p.Tasks))
		for i := range outs {
			outs[i].Task = iterate.Task{Iteration: it, Index: i}
			if fails(it, i) {
				outs[i].Err = errors.New("fails")
			} else {
				outs[i].Part = part(s, it, i)
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
	task(ctx context.Context, session string, it, idx int)
	integrated(ctx context.Context, session string, it int)
}

// worker is the loop's iterate.Worker.
type worker struct {
	sp  spec
	rec recorder
}

func (w *worker) Assess(_ context.Context, s state) (gap.Assessment, error) {
	return gap.Assessment{
		WorkRemaining: []string{fmt.Sprintf("%d of %d", s.Round, w.sp.Iterations)}, // changes: never stuck
		Complete:      s.Round >= w.sp.Iterations,
	}, nil
}

func (w *worker) Work(ctx context.Context, s state, t iterate.Task) (iterate.Outcome[state], error) {
	if w.sp.TaskMillis > 0 {
		// Tasks take a little longer or shorter, so that they finish in
		// varying orders.
		d := time.Duration(w.sp.TaskMillis)*time.Millisecond + time.Duration(t.Index*37%11)*time.Millisecond
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return iterate.Outcome[state]{}, context.Cause(ctx)
		}
	}
	out := iterate.Outcome[state]{Part: part(s, t.Iteration, t.Index), Usage: taskUsage(t.Iteration, t.Index)}
	if w.rec != nil {
		w.rec.task(ctx, w.sp.Session, t.Iteration, t.Index)
	}
	if fails(t.Iteration, t.Index) {
		return out, fmt.Errorf("task %s: scripted failure", taskID(t.Iteration, t.Index))
	}
	return out, nil
}

func (w *worker) Integrate(ctx context.Context, s state, outs []iterate.Outcome[state]) (state, error) {
	next := integrate(s, outs)
	if w.rec != nil {
		w.rec.integrated(ctx, w.sp.Session, next.Round)
	}
	return next, nil
}

// newEngine returns the session's engine on store, with the journal on.
func newEngine(sp spec, store iterate.Checkpointer, rec recorder) iterate.Engine[state] {
	return iterate.New[state](&worker{sp: sp, rec: rec},
		iterate.WithStrategy(iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
			return plan(sit.Iteration), nil
		})),
		iterate.WithMaxIterations(sp.Iterations+1),
		iterate.WithCheckpointer(store, iterate.Journal),
		iterate.WithSession(sp.Session),
	)
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
