package iterate

// This file holds WithParkAtLimit: a loop that reaches its budget's limit
// parks (escalates with a question asking for more) instead of stopping,
// and the answer may carry the extension (ExtendBudget, extend.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/internal/jsonfloat"
)

// WithParkAtLimit parks the loop at its budget's limit instead of stopping
// it: when a hard limit of [WithBudget] is reached, or the next
// iteration's estimate would exceed one, the loop escalates (status
// [Escalated], an *EscalationError) rather than stopping
// [BudgetExhausted]. Its Escalation.Parked names the limits reached, the
// limits, what was spent and the latest coverage, confidence and score,
// and its question asks for more, e.g. "195000 of 200000 tokens spent at
// coverage 0.72; extend the budget?".
//
// Resume answers the question:
//
//   - with [ExtendBudget] (alone, or beside [WithAnswer] for a text the
//     tasks receive): the session continues in place under the raised
//     limits, keeping every counter, the extension recorded
//     (Result.Extensions). It is an answer like any other: the answer's
//     text (empty with ExtendBudget alone) goes to the next iteration's
//     tasks, with a fresh allowance of [WithMaxIterations]'s iterations.
//     Limits still short of the next iteration park it again.
//   - with WithAnswer alone: the session stops BudgetExhausted, as it
//     would have without this option, the answer quoted in its reason.
//     ExtendBudget can still continue it later.
//   - with neither: the *EscalationError again. A [WithQuestionDeadline]
//     applies as to any question: under ExpireStop the session ends
//     [Expired] (final); under ExpireAnswer its default answer, which
//     carries no extension, stops it BudgetExhausted.
//
// It needs a hard limit (a limit of WithBudget not warn-only): without
// one it is a *ConfigError. It is part of the settings that guard
// Resume.
func WithParkAtLimit() Option {
	return optionFunc(func(c *config) { c.park = true })
}

// Parked describes a loop parked at its budget's limit (see
// [WithParkAtLimit]): Escalation.Parked, saved with the question.
type Parked struct {
	// Reached is the set of hard limits reached: spent, or that the next
	// iteration's estimate would exceed.
	Reached budget.Resource `json:"reached"`
	// Limits are the session's limits when it parked, and Spent what it
	// had spent then.
	Limits budget.Limits `json:"limits"`
	Spent  budget.Usage  `json:"spent"`
	// Coverage, Confidence and Score are the latest assessment's, as
	// recorded in the history (zero when not measured).
	Coverage   float64 `json:"coverage,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	Score      float64 `json:"score,omitempty"`
}

// question phrases the question of a loop parked at p, after n
// iterations: "195000 of 200000 tokens spent at coverage 0.72; extend
// the budget?".
func (p *Parked) question(n int) string {
	var spent []string
	for _, r := range []budget.Resource{budget.Iterations, budget.Tokens, budget.Cost, budget.Wall, budget.Calls} {
		if p.Reached&r == 0 {
			continue
		}
		switch r {
		case budget.Iterations:
			spent = append(spent, fmt.Sprintf("%d of %d iterations", p.Spent.Iterations, p.Limits.Iterations))
		case budget.Tokens:
			spent = append(spent, fmt.Sprintf("%d of %d tokens", p.Spent.Tokens, p.Limits.Tokens))
		case budget.Cost:
			spent = append(spent, fmt.Sprintf("%s of %s in cost", formatRatio(p.Spent.Cost), formatRatio(p.Limits.Cost)))
		case budget.Wall:
			spent = append(spent, fmt.Sprintf("%v of %v of wall time", p.Spent.Wall, p.Limits.Wall))
		case budget.Calls:
			spent = append(spent, fmt.Sprintf("%d of %d calls", p.Spent.Calls, p.Limits.Calls))
		}
	}
	var at []string
	for _, m := range []struct {
		name string
		v    float64
	}{{"coverage", p.Coverage}, {"confidence", p.Confidence}, {"score", p.Score}} {
		if m.v != 0 {
			at = append(at, m.name+" "+formatRatio(m.v))
		}
	}
	where := " after " + plural(n, "iteration")
	if len(at) > 0 {
		where = " at " + strings.Join(at, ", ")
	}
	return strings.Join(spent, " and ") + " spent" + where + "; extend the budget?"
}

// formatRatio formats a metric or a cost: the shortest decimal that reads
// back as v ("0.72", "NaN").
func formatRatio(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// atLimit ends the loop at its budget's limit, reached (a set of
// resources): it parks under WithParkAtLimit, else stops BudgetExhausted.
func (r *run[S]) atLimit(ctx context.Context, reached budget.Resource, reason string) (*Result[S], error) {
	if !r.cfg.park || reached == 0 {
		return r.stop(ctx, BudgetExhausted, reason)
	}
	p := &Parked{Reached: reached, Limits: r.limits, Spent: r.budget.Spent()}
	if n := len(r.hist.Recent); n > 0 {
		rec := &r.hist.Recent[n-1]
		p.Coverage, p.Confidence, p.Score = rec.Coverage, rec.Confidence, rec.Score
	}
	esc := buildEscalation(&r.hist, reason, 0)
	esc.Question = p.question(r.hist.Iteration)
	esc.Parked = p
	r.data.Escalation = r.applyDeadline(esc)
	return r.stop(ctx, Escalated, reason)
}

// reachedOf names the limit of a refused reservation, an
// *budget.ExceededError (0 for another error, such as an invalid
// estimate, which no extension mends).
func reachedOf(err error) budget.Resource {
	var e *budget.ExceededError
	if errors.As(err, &e) {
		return e.Resource
	}
	return 0
}

// steerParked is steer for a parked session (an escalation with Parked):
// an extension answers its question; an answer without one stops it
// BudgetExhausted. It returns the result to return, or nil to go on.
func (r *run[S]) steerParked(ctx context.Context, reason string, rc *resumeConfig) (*Result[S], error) {
	if rc.hasExtend {
		// The extension is the answer (with WithAnswer's text, if any).
		rc.hasAnswer = true
		return nil, nil
	}
	if !rc.hasAnswer {
		if res, err := r.unanswered(ctx, reason, rc); res != nil || err != nil {
			return res, err
		}
		// Expired under ExpireAnswer: the default answer, without an
		// extension.
	}
	why := reason + "; answered without an extension"
	if rc.answer != "" {
		why += ": " + strconv.Quote(rc.answer)
	}
	r.data.Escalation = nil
	if err := r.save(ctx, BudgetExhausted, why); err != nil && r.fatalSave(err) {
		return nil, fmt.Errorf("iterate: session %q: saving the stop at the budget: %w", r.cfg.session, err)
	}
	return r.result(BudgetExhausted, why, nil), nil
}

// parked reports whether the session's open question is a park at its
// budget's limit.
func (r *run[S]) parked() bool {
	return r.data.Escalation != nil && r.data.Escalation.Parked != nil
}

// checkPark refuses WithParkAtLimit without a hard limit.
func checkPark(c *config) {
	l := c.limits
	hard := budget.Resource(0)
	for _, set := range []struct {
		r  budget.Resource
		on bool
	}{{budget.Iterations, l.Iterations > 0}, {budget.Tokens, l.Tokens > 0}, {budget.Cost, l.Cost > 0}, {budget.Wall, l.Wall > 0}, {budget.Calls, l.Calls > 0}} {
		if set.on {
			hard |= set.r
		}
	}
	if c.park && hard&^l.WarnOnly == 0 {
		c.invalid("WithParkAtLimit", "has no effect without a hard limit of WithBudget")
	}
}

// parkSetting is WithParkAtLimit's setting, when set: sessions without it
// keep their fingerprints.
func parkSetting(c *config) (setting, bool) {
	if !c.park {
		return setting{}, false
	}
	return setting{"at the budget's limit", "park"}, true
}

// parked encodes the Parked of an escalation (see escalation).
func (j *jsonBuf) parked(p *Parked) {
	if p == nil {
		return
	}
	j.key("parked")
	j.b = append(j.b, `{"reached":`...)
	j.int(int64(p.Reached))
	j.key("limits")
	j.marshal(p.Limits) // validated: finite
	j.key("spent")
	j.usage(p.Spent)
	for _, f := range []struct {
		name string
		v    float64
	}{{"coverage", p.Coverage}, {"confidence", p.Confidence}, {"score", p.Score}} {
		if f.v != 0 {
			j.key(f.name)
			j.float(f.v)
		}
	}
	j.b = append(j.b, '}')
}

// UnmarshalJSON decodes a Parked as encoding/json would, also reading the
// floats that are not finite, which the engine saves as the strings
// "NaN", "+Inf" and "-Inf".
func (p *Parked) UnmarshalJSON(data []byte) error {
	type fields Parked // Parked's fields, without this method
	v := struct {
		*fields
		Spent      usageRef      `json:"spent"`
		Coverage   jsonfloat.Ref `json:"coverage"`
		Confidence jsonfloat.Ref `json:"confidence"`
		Score      jsonfloat.Ref `json:"score"`
	}{(*fields)(p), usageRef{&p.Spent}, jsonfloat.Ref{F: &p.Coverage}, jsonfloat.Ref{F: &p.Confidence}, jsonfloat.Ref{F: &p.Score}}
	return json.Unmarshal(data, &v)
}
