// Package iteratetest provides helpers for table-driven tests of refinement
// loops: [Script], a worker whose assessments and task outcomes follow a
// table, [Recorder], which records the events of a loop, and [Table],
// which runs a host's policy and strategy over a decision table of
// assessments and returns each row's gaps, decision and plan.
//
// A host tests its own loop with two more: [Cassette] records the outcomes
// of its worker's tasks once, in a real run, and replays them in every
// test after (no model call, no cost, deterministic); [Crash] kills the
// loop at every persistence boundary in a child process, resumes it, and
// checks that it ends as an uninterrupted run.
//
//	script := &iteratetest.Script{Steps: []iteratetest.Step{
//		{Assessment: gap.Assessment{Coverage: 0.6, Confidence: 0.85}},
//		{Assessment: gap.Assessment{Coverage: 0.75, Confidence: 0.85}},
//	}}
//	res, err := iterate.New(script).Run(ctx, iteratetest.State{})
package iteratetest

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// State is the state of a [Script]: the number of integrated iterations and
// the IDs of the tasks that ran, in task order ("1.1", "2.1", "2.2", ...),
// with failed ones marked "!".
type State struct {
	Round int      `json:"round"`
	Tasks []string `json:"tasks,omitempty"`
}

// Step scripts one round: the assessment of the state after Round iterations
// and what the tasks of the iteration that follows do.
type Step struct {
	// Assessment is what Assess returns for this round, AssessErr its error.
	Assessment gap.Assessment
	AssessErr  error
	// Err fails every task of the iteration (unless Work is set).
	Err error
	// FailTasks fails the tasks with these 0-based indexes.
	FailTasks []int
	// Panic makes every task panic with this value.
	Panic any
	// Usage is charged by every task.
	Usage budget.Usage
	// Work, when set, runs for every task instead of the above and returns
	// the task's error. It may block on ctx to script slow work.
	Work func(ctx context.Context, t iterate.Task) error
	// IntegrateErr fails the integration of the iteration.
	IntegrateErr error
}

// Script is an [iterate.Worker] of [State] that follows Steps: round k (the
// state after k iterations) uses Steps[k], or the last step once the table
// runs out. A Script is safe for concurrent use; a test reads what happened
// with Calls.
type Script struct {
	Steps []Step

	mu    sync.Mutex
	tasks []iterate.Task
	asses int
}

var _ iterate.Worker[State] = (*Script)(nil)

func (s *Script) step(round int) *Step {
	if len(s.Steps) == 0 {
		return &Step{}
	}
	if round >= len(s.Steps) {
		round = len(s.Steps) - 1
	}
	return &s.Steps[round]
}

// Assess returns the scripted assessment of the round.
func (s *Script) Assess(_ context.Context, st State) (gap.Assessment, error) {
	s.mu.Lock()
	s.asses++
	s.mu.Unlock()
	step := s.step(st.Round)
	return step.Assessment, step.AssessErr
}

// Work runs a task as scripted.
func (s *Script) Work(ctx context.Context, st State, t iterate.Task) (iterate.Outcome[State], error) {
	s.mu.Lock()
	s.tasks = append(s.tasks, t)
	s.mu.Unlock()
	step := s.step(st.Round)
	out := iterate.Outcome[State]{Part: State{Tasks: []string{t.ID()}}, Usage: step.Usage}
	if step.Work != nil {
		return out, step.Work(ctx, t)
	}
	if step.Panic != nil {
		panic(step.Panic)
	}
	for _, i := range step.FailTasks {
		if i == t.Index {
			return out, fmt.Errorf("scripted failure of task %s", t.ID())
		}
	}
	return out, step.Err
}

// Integrate advances the round and records the tasks in order, failed ones
// with a "!" suffix.
func (s *Script) Integrate(_ context.Context, st State, outs []iterate.Outcome[State]) (State, error) {
	if err := s.step(st.Round).IntegrateErr; err != nil {
		return st, err
	}
	next := State{Round: st.Round + 1, Tasks: append([]string(nil), st.Tasks...)}
	for i := range outs {
		id := outs[i].Task.ID()
		if outs[i].Err != nil {
			id += "!"
		}
		next.Tasks = append(next.Tasks, id)
	}
	return next, nil
}

// Calls returns the number of assessments made and a copy of every task
// Work received, in the order the calls happened.
func (s *Script) Calls() (assessments int, tasks []iterate.Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asses, append([]iterate.Task(nil), s.tasks...)
}

// Recorder records the events of a loop. Pass its Observe method to
// iterate.WithObserver. The zero value is ready; safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []iterate.Event
}

// Observe records e.
func (r *Recorder) Observe(e iterate.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of the recorded events.
func (r *Recorder) Events() []iterate.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]iterate.Event(nil), r.events...)
}

// Kinds returns the type names of the recorded events, e.g.
// "LoopStarted", "IterationStarted", ..., omitting the task events (whose
// order between parallel tasks is not deterministic) unless withTasks.
func (r *Recorder) Kinds(withTasks bool) []string {
	var out []string
	for _, e := range r.Events() {
		name := reflect.TypeOf(e).Name()
		if !withTasks && (name == "TaskStarted" || name == "TaskEnded") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// Warnings returns the messages of the Warned events.
func (r *Recorder) Warnings() []string {
	var out []string
	for _, e := range r.Events() {
		if w, ok := e.(iterate.Warned); ok {
			out = append(out, w.Message)
		}
	}
	return out
}

// Of returns the recorded events of type E, in order.
func Of[E iterate.Event](r *Recorder) []E {
	var out []E
	for _, e := range r.Events() {
		if v, ok := e.(E); ok {
			out = append(out, v)
		}
	}
	return out
}

// At returns the first recorded event of type E that belongs to iteration n
// (as its Iteration method reports), and whether there is one: the look-up
// of "the plan of iteration 2" or "how iteration 3 ended".
//
//	plan, ok := iteratetest.At[iterate.Planned](rec, 2)
func At[E iterate.Event](r *Recorder, n int) (E, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if v, ok := e.(E); ok && v.Iteration() == n {
			return v, true
		}
	}
	var zero E
	return zero, false
}
