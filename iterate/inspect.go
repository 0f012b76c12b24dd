package iterate

// This file reads the engine's resume record for tools that inspect a
// session without running it.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
)

// Report is what the engine's record in a checkpoint tells of a session,
// decoded by [Inspect] for tools that look at loops without running them (an
// inspector, a dashboard). The checkpoint's envelope (status, reason,
// iteration, time, open question) is not repeated here. A Report shares no
// memory with the checkpoint it was read from.
type Report struct {
	// StartedAt is when the session first started (before any resume),
	// LastIterationAt when its latest iteration ended (zero before the
	// first), and Elapsed the total duration of its iterations, across
	// resumes.
	StartedAt, LastIterationAt time.Time
	Elapsed                    time.Duration
	// Usage is what the loop has spent, across resumes; Limits are the
	// budget limits it runs under (a zero field is unlimited).
	Usage  budget.Usage
	Limits budget.Limits
	// Totals sums over every iteration, across resumes.
	Totals Totals
	// History is the convergence history as saved: Recent holds a record of
	// each of the most recent iterations, oldest first (a window: the
	// earliest iterations of a long loop are not kept), each with the
	// coverage, confidence and conflicts it reached, its gaps by kind and
	// priority, the decision taken on it, its action, duration, tokens,
	// cost and calls, and each of its tasks (role, duration, tokens, error,
	// output), and Pending the iteration completed
	// since the last assessment; Gaps are the gaps open at the latest
	// assessment. Thresholds, MaxIterations, Window and FailureThreshold are
	// the loop's settings. A session's whole history is the union of the
	// records of its kept generations (see GenerationLoader).
	History converge.History
	// Decision is the latest convergence decision; Decision.Unmet() lists
	// the criteria not met.
	Decision converge.Decision
	// Escalation is the loop's escalation to a human, when it escalated.
	Escalation *Escalation
	// Extensions are the raises of the session's budget in place
	// ([ExtendBudget]), oldest first, as Result.Extensions lists them.
	Extensions []Extension
	// Settings are the loop's effective settings as name and value, in the
	// engine's order, e.g. {"coverage threshold", "0.7"}: those the
	// checkpoint's Fingerprint hashes, and that a resume under other
	// settings names when it refuses. Limits and History hold those a tool
	// needs as numbers.
	Settings [][2]string
}

// Inspect decodes the engine's record in c (its Engine bytes, as a run of
// this package saves them) into a Report. It does not decode the state, so
// it needs neither the state type nor the worker, and it never modifies c.
// Inspect of a checkpoint listed by a store's Sessions method, which leaves
// Engine nil, fails: load the session's checkpoint first.
//
// A record that is missing or does not decode gives an error matching
// checkpoint.ErrCorrupt (a *checkpoint.CorruptError naming the
// generation); a nil c gives checkpoint.ErrNilCheckpoint. Settings whose
// values do not read as numbers leave the matching fields of Limits and
// History zero but stay in Settings.
func Inspect(c *checkpoint.Checkpoint) (*Report, error) {
	if c == nil {
		return nil, checkpoint.ErrNilCheckpoint
	}
	corrupt := func(err error) error {
		return fmt.Errorf("iterate: inspecting session %q: decoding the engine record: %w", c.Session,
			&checkpoint.CorruptError{Generation: c.Generation, Err: err})
	}
	if len(c.Engine) == 0 {
		return nil, corrupt(errors.New("no engine record"))
	}
	var d engineData
	if err := json.Unmarshal(c.Engine, &d); err != nil {
		return nil, corrupt(err)
	}
	r := &Report{
		StartedAt:       d.StartedAt,
		LastIterationAt: d.LastIterationAt,
		Elapsed:         d.Elapsed,
		Usage:           d.Usage,
		Totals:          d.Totals,
		Decision:        d.Decision,
		Escalation:      d.Escalation,
		Extensions:      d.Extensions,
	}
	if d.History != nil {
		r.History = *d.History
	}
	r.History.Gaps = d.Gaps
	for _, s := range d.Settings {
		r.Settings = append(r.Settings, [2]string{s.Name, s.Value})
		r.setting(s.Name, s.Value)
	}
	return r, nil
}

// setting sets the field of r that the setting named name configures, as
// settingsOf writes it; a value that does not parse leaves it alone.
func (r *Report) setting(name, v string) {
	t := &r.History.Thresholds
	ratio := func(dst *float64) {
		if v == "off" {
			*dst = -1
		} else if f, err := strconv.ParseFloat(v, 64); err == nil {
			*dst = f
		}
	}
	integer := func(dst *int) {
		if n, err := strconv.Atoi(v); err == nil {
			*dst = n
		}
	}
	integer64 := func(dst *int64) {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			*dst = n
		}
	}
	switch name {
	case "max iterations":
		integer(&r.History.MaxIterations)
	case "failure threshold":
		integer(&r.History.FailureThreshold)
	case "history window":
		integer(&r.History.Window)
	case "coverage threshold":
		ratio(&t.MinCoverage)
	case "confidence threshold":
		ratio(&t.MinConfidence)
	case "max conflicts":
		integer(&t.MaxConflicts)
	case "allow unanswered":
		t.AllowUnanswered = v == "true"
	case "early-exit coverage":
		ratio(&t.EarlyCoverage)
	case "early-exit confidence":
		ratio(&t.EarlyConfidence)
	case "completeness threshold":
		ratio(&t.MinCompleteness)
	case "quality threshold":
		ratio(&t.MinQuality)
	case "signal confidence threshold":
		ratio(&t.MinSignalConfidence)
	case "iteration limit":
		integer(&r.Limits.Iterations)
	case "token limit":
		integer64(&r.Limits.Tokens)
	case "cost limit":
		ratio(&r.Limits.Cost)
	case "wall-time limit":
		if d, err := time.ParseDuration(v); err == nil {
			r.Limits.Wall = d
		}
	case "call limit":
		integer64(&r.Limits.Calls)
	case "budget warning level":
		ratio(&r.Limits.WarnAt)
	case "warn-only resources":
		if n, err := strconv.ParseUint(v, 10, 8); err == nil {
			r.Limits.WarnOnly = budget.Resource(n)
		}
	}
}
