package iterate

import (
	"fmt"
	"strings"
	"time"

	"github.com/refine-go/refine/budget"
)

// Extension is one raise of a session's budget in place (see
// [ExtendBudget]): who raised it, when, after how many iterations, and the
// limits before and after.
type Extension struct {
	By        string        `json:"by,omitempty"`
	At        time.Time     `json:"at"`
	Iteration int           `json:"iteration"`
	From      budget.Limits `json:"from"`
	To        budget.Limits `json:"to"`
}

// String describes the extension, e.g. "alice raised tokens 200000 →
// 300000 after 6 iterations".
func (x Extension) String() string {
	by := x.By
	if by == "" {
		by = "someone"
	}
	return by + " raised " + strings.Join(limitChanges(x.From, x.To), ", ") + " after " + plural(x.Iteration, "iteration")
}

// ExtendBudget raises the budget of the session being resumed, in place, to
// the limits to; by names who did (recorded with the session, and in
// Result.Extensions). A session that stopped budget_exhausted continues in
// the same session, keeping every counter (iterations, usage, history,
// totals); a session parked at its limit ([WithParkAtLimit]) takes it as
// the answer to its question and continues the same way; a session that
// has not ended continues under the raised limits.
//
// Every hard limit of to must be at least the session's (0, no limit,
// raises any); the warning level and the warn-only resources must not
// change. Any other change of the settings is still refused with a
// *SettingsChangedError unless [AllowSettingsChange] is given too. An
// extension that lowers a limit is a *ConfigError.
//
// The raised limits stay with the session: a later Resume of an engine
// configured with the session's first limits (the host's code unchanged)
// runs under the raised ones; one configured with the raised limits
// matches them.
func ExtendBudget(to budget.Limits, by string) ResumeOption {
	return resumeFunc(func(c *resumeConfig) { c.extend, c.extendBy, c.hasExtend = to, by, true })
}

// limitChanges lists the limits that differ from a to b, e.g. "tokens
// 200000 → 300000", "wall 10m0s → none".
func limitChanges(a, b budget.Limits) []string {
	var out []string
	add := func(name string, x, y any, unset bool) {
		if x != y {
			ys := fmt.Sprint(y)
			if unset {
				ys = "none"
			}
			out = append(out, name+" "+fmt.Sprint(x)+" → "+ys)
		}
	}
	add("iterations", a.Iterations, b.Iterations, b.Iterations == 0)
	add("tokens", a.Tokens, b.Tokens, b.Tokens == 0)
	add("cost", a.Cost, b.Cost, b.Cost == 0)
	add("wall", a.Wall, b.Wall, b.Wall == 0)
	add("calls", a.Calls, b.Calls, b.Calls == 0)
	if len(out) == 0 {
		out = append(out, "nothing")
	}
	return out
}

// raises reports whether to raises, or keeps, every hard limit of from, and
// why not otherwise.
func raises(from, to budget.Limits) error {
	var bad []string
	check := func(name string, f, t float64) {
		if f != 0 && t != 0 && t < f {
			bad = append(bad, fmt.Sprintf("%s %v → %v", name, f, t))
		}
		if f == 0 && t != 0 {
			bad = append(bad, fmt.Sprintf("%s none → %v", name, t))
		}
	}
	check("iterations", float64(from.Iterations), float64(to.Iterations))
	check("tokens", float64(from.Tokens), float64(to.Tokens))
	check("cost", from.Cost, to.Cost)
	check("wall", from.Wall.Seconds(), to.Wall.Seconds())
	check("calls", float64(from.Calls), float64(to.Calls))
	if from.WarnAt != to.WarnAt || from.WarnOnly != to.WarnOnly {
		bad = append(bad, "the warning level or warn-only resources changed")
	}
	if len(bad) > 0 {
		return &ConfigError{Option: "ExtendBudget", Reason: "not a raise: " + strings.Join(bad, ", ")}
	}
	return nil
}

// savedLimits returns the budget limits recorded in a session's settings.
func savedLimits(settings []setting) budget.Limits {
	var r Report
	for _, s := range settings {
		r.setting(s.Name, s.Value)
	}
	return r.Limits
}

// useLimits makes the run's budget limits l, with its settings and
// fingerprint: the engine's, but for the limits.
func (r *run[S]) useLimits(l budget.Limits) error {
	cfg := *r.cfg
	cfg.limits = l
	r.limits = l
	r.limited = l != (budget.Limits{})
	r.budget = nil
	if r.limited {
		b, err := budget.New(l)
		if err != nil {
			return &ConfigError{Option: "ExtendBudget", Reason: "invalid limits", Err: err}
		}
		b.Restore(r.data.Usage)
		r.budget = b
	}
	r.settings = settingsOf(&cfg)
	r.fingerprint = fingerprintOf(r.settings)
	return nil
}

// settingsFor returns the engine's settings and fingerprint with the
// budget limits l.
func (e *engine[S]) settingsFor(l budget.Limits) ([]setting, string) {
	cfg := e.cfg
	cfg.limits = l
	s := settingsOf(&cfg)
	return s, fingerprintOf(s)
}

// checkSettings compares the settings of the session's checkpoint with
// the run's, applying the session's budget: the extensions it carries, and
// the one rc asks for. It returns whether a budget_exhausted session may
// continue (it was extended now).
func (r *run[S]) checkSettings(saved []setting, fingerprint string, rc *resumeConfig) (extended bool, err error) {
	e := r.e
	savedL := savedLimits(saved)
	if rc.hasExtend {
		if err := raises(savedL, rc.extend); err != nil {
			return false, err
		}
		// The settings but the budget must be the session's.
		if s, fp := e.settingsFor(savedL); fp != fingerprint && !rc.allowChange {
			return false, &SettingsChangedError{Session: e.cfg.session, Changes: changes(saved, s)}
		}
		x := Extension{By: rc.extendBy, At: time.Now(), Iteration: r.hist.Iteration, From: savedL, To: rc.extend}
		r.data.Extensions = append(r.data.Extensions, x)
		return true, r.useLimits(rc.extend)
	}
	if xs := r.data.Extensions; len(xs) > 0 && e.cfg.limits == xs[0].From && savedL == xs[len(xs)-1].To {
		// The host's code still configures the session's first budget:
		// the session's raised one holds.
		if _, fp := e.settingsFor(savedL); fp == fingerprint || rc.allowChange {
			return false, r.useLimits(savedL)
		}
	}
	if fingerprint != e.fingerprint && !rc.allowChange {
		return false, &SettingsChangedError{Session: e.cfg.session, Changes: changes(saved, e.settings)}
	}
	return false, nil
}
