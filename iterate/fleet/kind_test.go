package fleet_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// The tests' own kind of loop, defined here as a host defines its own: a
// deterministic loop of Iterations iterations of 2 to 4 parallel tasks,
// some failing by script, whose state is a digest of every outcome seeded
// by the session's name, so that the end of any session is checkable
// against an uninterrupted run.

// synthArgs are a synthetic session's arguments.
type synthArgs struct {
	Name       string `json:"name"`
	Iterations int    `json:"iterations"`
	TaskMillis int    `json:"task_ms"`
	// LongMillis, when set, is how long task 0 of iteration 2 takes.
	LongMillis int `json:"long_ms,omitempty"`
	// EscalateAt, when set, escalates after that many iterations, until
	// answered.
	EscalateAt int `json:"escalate_at,omitempty"`
}

// synthState is a synthetic session's state.
type synthState struct {
	Round  int      `json:"round"`
	Sum    string   `json:"sum"`
	Log    []string `json:"log,omitempty"`
	Answer string   `json:"answer,omitempty"`
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// recorder notes what the worker executes: a ledger. Nil records nothing.
type recorder interface {
	task(ctx context.Context, it, idx int)
	integrated(ctx context.Context, it int)
}

type synthWorker struct {
	a   synthArgs
	rec recorder
}

func synthFails(it, idx int) bool { return idx > 0 && (it*7+idx*3)%5 == 0 }

func synthUsage(it, idx int) budget.Usage {
	return budget.Usage{Tokens: int64(1000*it + 10*idx + 7), Calls: 1}
}

func taskID(it, idx int) string { return strconv.Itoa(it) + "." + strconv.Itoa(idx+1) }

func (w *synthWorker) Assess(_ context.Context, s synthState) (gap.Assessment, error) {
	return gap.Assessment{
		WorkRemaining: []string{fmt.Sprintf("%d of %d", s.Round, w.a.Iterations)},
		Complete:      s.Round >= w.a.Iterations,
	}, nil
}

func (w *synthWorker) Work(ctx context.Context, s synthState, t iterate.Task) (iterate.Outcome[synthState], error) {
	d := time.Duration(w.a.TaskMillis)*time.Millisecond + time.Duration(t.Index*37%11)*time.Millisecond
	if w.a.LongMillis > 0 && t.Iteration == 2 && t.Index == 0 {
		d = time.Duration(w.a.LongMillis) * time.Millisecond
	}
	if d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return iterate.Outcome[synthState]{}, context.Cause(ctx)
		}
	}
	id := taskID(t.Iteration, t.Index)
	sum := digest(s.Sum, id, t.Answer)
	out := iterate.Outcome[synthState]{Part: synthState{Sum: sum, Log: []string{id + "=" + sum[:12]}, Answer: t.Answer},
		Usage: synthUsage(t.Iteration, t.Index)}
	if w.rec != nil {
		w.rec.task(ctx, t.Iteration, t.Index)
	}
	if synthFails(t.Iteration, t.Index) {
		return out, fmt.Errorf("task %s: scripted failure", id)
	}
	return out, nil
}

func (w *synthWorker) Integrate(ctx context.Context, s synthState, outs []iterate.Outcome[synthState]) (synthState, error) {
	next := synthState{Round: s.Round + 1, Sum: s.Sum, Log: append([]string(nil), s.Log...), Answer: s.Answer}
	for _, o := range outs {
		id := taskID(o.Task.Iteration, o.Task.Index)
		if o.Err != nil {
			next.Log = append(next.Log, id+"!")
			next.Sum = digest(next.Sum, id+"!")
			continue
		}
		if o.Part.Answer != "" {
			next.Answer = o.Part.Answer
		}
		next.Log = append(next.Log, o.Part.Log...)
		next.Sum = digest(next.Sum, o.Part.Sum)
	}
	if w.rec != nil {
		w.rec.integrated(ctx, next.Round)
	}
	return next, nil
}

// synthLoop builds a synthetic session's loop.
func synthLoop(a synthArgs, rec recorder) fleet.Loop[synthState] {
	return fleet.Loop[synthState]{
		Worker: &synthWorker{a: a, rec: rec},
		Options: []iterate.Option{
			iterate.WithStrategy(iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
				if a.EscalateAt > 0 && sit.AnsweredAt == 0 && sit.History.Iteration >= a.EscalateAt {
					return iterate.Plan{Action: iterate.Escalate, Escalation: &iterate.Escalation{
						Reason: "scripted", Question: "which way, " + a.Name + "?"}}, nil
				}
				tasks := make([]iterate.Task, 2+sit.Iteration%3)
				for i := range tasks {
					tasks[i] = iterate.Task{Role: "explore", Gaps: []gap.Gap{{Kind: gap.MissingContext, Target: fmt.Sprintf("item-%d-%d", sit.Iteration, i)}}}
				}
				return iterate.Plan{Action: iterate.Refine, Tasks: tasks}, nil
			})),
			iterate.WithMaxIterations(a.Iterations + 1),
		},
		Initial: synthState{Sum: digest(a.Name)},
	}
}

// registerSynth registers the synthetic kind on f.
func registerSynth(f *fleet.Fleet, rec recorder) *fleet.Kind[synthArgs, synthState] {
	return fleet.MustRegister(f, "synthetic", func(_ context.Context, a synthArgs) (fleet.Loop[synthState], error) {
		if a.Iterations < 1 {
			return fleet.Loop[synthState]{}, errors.New("synthetic: no iterations")
		}
		return synthLoop(a, rec), nil
	})
}

// summary is what a finished session is compared on.
type summary struct {
	State      synthState
	Status     iterate.Status
	Reason     string
	Iterations int
	Usage      budget.Usage
	Totals     iterate.Totals
}

func summarize(res *iterate.Result[synthState]) summary {
	u := res.Usage
	u.Wall = 0
	t := res.Totals
	t.Duration = 0
	return summary{State: res.State, Status: res.Status, Reason: res.Reason, Iterations: res.Iterations, Usage: u, Totals: t}
}

// ledger records task runs and integrations, with the fencing token the
// worker held (fleet.Holding), in the test's schema.
type ledger struct {
	pool *pgxpool.Pool
	q    string
}

const ledgerDDL = `
CREATE TABLE IF NOT EXISTS %[1]s.test_task_runs (session text, iteration int, task int, token bigint, pid int);
CREATE TABLE IF NOT EXISTS %[1]s.test_integrations (session text, iteration int, token bigint, pid int);`

func (l *ledger) task(ctx context.Context, it, idx int) {
	s, tok, _ := fleet.Holding(ctx)
	l.pool.Exec(context.WithoutCancel(ctx), `INSERT INTO `+l.q+`.test_task_runs VALUES ($1,$2,$3,$4,pg_backend_pid())`, s, it, idx, int64(tok))
}

func (l *ledger) integrated(ctx context.Context, it int) {
	s, tok, _ := fleet.Holding(ctx)
	l.pool.Exec(context.WithoutCancel(ctx), `INSERT INTO `+l.q+`.test_integrations VALUES ($1,$2,$3,pg_backend_pid())`, s, it, int64(tok))
}
