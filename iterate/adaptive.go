package iterate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// Role describes the worker that should close a kind of gap.
type Role struct {
	// Name is the role, e.g. [RoleExplore]; it becomes Task.Role.
	Name RoleName
	// Prompt is the instruction template. {target}, {detail} and {focus}
	// are replaced by the gap's Target, Detail and Focus (comma-separated).
	Prompt string
	// Group puts every selected gap of this role into one task (an
	// implementer fixes all issues in one attempt) instead of one task per
	// gap.
	Group bool
}

// Roles maps gap kinds to worker roles.
type Roles map[gap.Kind]Role

// RoleName names a worker role: a [Role]'s Name and the Role of the tasks
// it gets ([Task]). The default roles of [Adaptive] are the constants
// below; a host's own roles are any other names.
type RoleName string

// The default roles of [Adaptive] name the worker of each kind of gap after
// seed 000's agents, with the implementer for the quality triggers of seeds
// 001 and 002. The citation, pattern and implement roles are grouped: one
// task takes every such gap of the iteration, so that twenty weak findings
// do not need seven iterations of three tasks each. Prompts, agents and
// models are the host's (see examples/research for seed 000's).
const (
	// RoleExplore takes coverage, missing context and unanswered question
	// gaps, gaps of a kind no role names, and the broad task of an
	// iteration without actionable gaps.
	RoleExplore RoleName = "explore"
	// RoleCitation takes confidence and evidence gaps (grouped).
	RoleCitation RoleName = "citation"
	// RolePattern takes pattern gaps (grouped).
	RolePattern RoleName = "pattern"
	// RoleVerify takes conflicting findings.
	RoleVerify RoleName = "verify"
	// RoleSecurity takes security gaps.
	RoleSecurity RoleName = "security"
	// RolePerformance takes performance gaps.
	RolePerformance RoleName = "performance"
	// RoleImplement takes the quality triggers: validation and test
	// failures, rejections, unmet requirements and the like (grouped).
	RoleImplement RoleName = "implement"
)

var (
	exploreRole     = Role{Name: RoleExplore}
	citationRole    = Role{Name: RoleCitation, Group: true}
	patternRole     = Role{Name: RolePattern, Group: true}
	verifyRole      = Role{Name: RoleVerify}
	securityRole    = Role{Name: RoleSecurity}
	performanceRole = Role{Name: RolePerformance}
	implementRole   = Role{Name: RoleImplement, Group: true}
)

// DefaultFeedbackLimit bounds [Adaptive]'s synthesised feedback, in bytes,
// when its FeedbackLimit is 0: seed 002's feedback_max_length.
const DefaultFeedbackLimit = 500

// defaultRole returns the default role of a kind of gap, and false for a
// kind with none (the host's kinds and ""). A switch rather than a map: the
// role is looked up for every task of every iteration.
func defaultRole(k gap.Kind) (Role, bool) {
	switch k {
	case gap.Coverage, gap.MissingContext, gap.UnansweredQuestion:
		return exploreRole, true
	case gap.Confidence, gap.Evidence:
		return citationRole, true
	case gap.Pattern:
		return patternRole, true
	case gap.ConflictingFindings:
		return verifyRole, true
	case gap.Security:
		return securityRole, true
	case gap.Performance:
		return performanceRole, true
	case gap.ValidationFailure, gap.LowConfidence, gap.IncompleteOutput, gap.ExplicitFeedback,
		gap.Hallucination, gap.RequirementUnmet, gap.QualityThreshold, gap.UserRejection, gap.TestFailure, gap.ReviewRejected:
		return implementRole, true
	}
	return Role{}, false
}

// broadRole is used when a gap's kind has no role, and for the broad task of
// an iteration without actionable gaps.
var broadRole = Role{Name: RoleExplore}

// Adaptive is the default [Strategy]. It chooses an action from the gaps and
// the history, and turns the highest-priority gaps into tasks:
//
//  1. A policy that escalated (seed 002: the iteration limit with checks
//     still failing) gets an escalation: the attempts summary, the pattern
//     detected and the question for the human.
//  2. Gaps are selected by priority and iterations remaining ([gap.Select]:
//     P1 and P2 with two or more iterations left, P1 only on the last one),
//     at most MaxTasks tasks, highest priority first, the rest deferred.
//  3. The action follows seed 001: refine when the same triggers survived a
//     retry; retry on validation failures; expand on low confidence (and on
//     coverage, context, question, security and performance gaps); retry
//     with verification on hallucinations; escalate near the iteration limit
//     (only with EscalateNearLimit); otherwise retry.
//  4. A strategy that just failed on the same triggers is never repeated,
//     and the response comes by degrees: when the same triggers survive an
//     attempt the plan carries a warning and switches strategy (retry →
//     refine → simplify → expand); when they survive three attempts, or
//     every strategy was tried, it stops (status Stuck, no error). With
//     EscalateAfter set it asks a human after that many attempts instead,
//     and stops when they survive that many again after the answer.
//  5. Feedback for the tasks is synthesised from the gaps, most severe
//     first, bounded to FeedbackLimit bytes (seed 002).
//
// The zero value uses the defaults. Adaptive keeps no state between calls:
// everything it needs is in the [Situation] and its history, so a resumed
// loop plans exactly as an uninterrupted one. Safe for concurrent use.
type Adaptive struct {
	// Roles maps gap kinds to worker roles; a kind it lacks gets its
	// default role ([RoleExplore] ... [RoleImplement], without a prompt).
	// The role of the kind "" takes the broad task of an iteration without
	// actionable gaps and the kinds no role names (default [RoleExplore]).
	Roles Roles
	// MaxTasks bounds the tasks per iteration; 0 means 3.
	MaxTasks int
	// FeedbackLimit bounds the synthesised feedback in bytes; 0 means
	// [DefaultFeedbackLimit].
	FeedbackLimit int
	// EscalateNearLimit escalates when one iteration is left and problems
	// remain (seed 001's "previous attempts ≥ max − 1"). Off by default, so
	// that the last allowed iteration is used.
	EscalateNearLimit bool
	// EscalateAfter is the number of consecutive attempts the same triggers
	// may survive before a human is asked. 0 means no human: the loop stops
	// as stuck after three attempts. Escalating is for hosts that have a
	// human to answer (see [EscalationError]).
	EscalateAfter int
}

// Validate reports negative settings.
func (s *Adaptive) Validate() error {
	switch {
	case s.MaxTasks < 0:
		return fmt.Errorf("Adaptive: MaxTasks %d < 0", s.MaxTasks)
	case s.FeedbackLimit < 0:
		return fmt.Errorf("Adaptive: FeedbackLimit %d < 0", s.FeedbackLimit)
	case s.EscalateAfter < 0:
		return fmt.Errorf("Adaptive: EscalateAfter %d < 0", s.EscalateAfter)
	}
	return nil
}

func (s *Adaptive) maxTasks() int {
	if s.MaxTasks > 0 {
		return s.MaxTasks
	}
	return defaultMaxTasks
}

func (s *Adaptive) feedbackLimit() int {
	if s.FeedbackLimit > 0 {
		return s.FeedbackLimit
	}
	return DefaultFeedbackLimit
}

// stuckAfter is how many attempts the same triggers survive before the
// strategy escalates or stops.
func (s *Adaptive) stuckAfter() int {
	if s.EscalateAfter > 0 {
		return s.EscalateAfter
	}
	return 3
}

func (s *Adaptive) role(k gap.Kind) Role {
	if len(s.Roles) > 0 {
		if r, ok := s.Roles[k]; ok {
			return r
		}
	}
	if r, ok := defaultRole(k); ok {
		return r
	}
	if len(s.Roles) > 0 {
		if r, ok := s.Roles[""]; ok {
			return r
		}
	}
	return broadRole
}

// Plan implements [Strategy].
func (s *Adaptive) Plan(_ context.Context, sit *Situation) (p Plan, _ error) {
	s.plan(sit, &p)
	return p, nil
}

// plan sets *p to the plan for sit: Plan, without copying the plan on its
// way (the engine calls it for an *Adaptive; see run.plan).
func (s *Adaptive) plan(sit *Situation, p *Plan) {
	if sit.Decision.Verdict == converge.Escalate {
		*p = s.escalation(sit, sit.Decision.Reason)
		return
	}
	gaps := sit.History.Gaps
	if len(gaps) == 0 {
		// Seed 000: no actionable gaps but not converged: force a broad
		// refinement. (The task is set in its slot: a Task built aside
		// would be copied twice on every such iteration.)
		tasks := append(sit.tasks, Task{})
		t := &tasks[len(tasks)-1]
		t.Action, t.Role, t.Prompt = Refine, broadRole.Name, broadRole.Prompt // role(""), without roles of the host's
		if len(s.Roles) > 0 {
			role := s.role("")
			t.Role, t.Prompt = role.Name, role.Prompt
		}
		*p = Plan{Action: Refine, Tasks: tasks, Reason: "no actionable gaps: broad refinement"}
		return
	}

	persist, tried := persistence(sit)
	action, reason, guidance := s.choose(sit, persist, tried)
	var warning string
	if persist > 0 {
		warning = fmt.Sprintf("the same %d problem(s) survived %d attempt(s); switching to %s", len(gaps), persist, action)
	}
	switch action {
	case Escalate:
		*p = s.escalation(sit, reason)
		p.Warning = warning
		return
	case Stop:
		*p = Plan{Action: action, Reason: reason, Guidance: guidance, Warning: warning}
		return
	}

	selected, deferred := gap.Select(gaps, sit.History.Remaining(), 0)
	if len(selected) == 0 && len(gaps) > 0 {
		// Nothing of high enough priority for the iterations left: address
		// the most important gap rather than idling.
		selected, deferred = gaps[:1:1], gaps[1:]
	}
	feedback := feedbackText(selected, s.feedbackLimit())
	tasks, deferred := s.tasks(sit.tasks, selected, deferred, action, feedback, guidance)
	*p = Plan{Action: action, Tasks: tasks, Deferred: deferred, Feedback: feedback, Guidance: guidance,
		Reason: reason, Warning: warning}
}

// tasks turns selected gaps into at most MaxTasks tasks, in order; grouped
// roles collect all their gaps into their first task.
func (s *Adaptive) tasks(dst []Task, selected, deferred []gap.Gap, action Action, fb string, guidance []string) ([]Task, []gap.Gap) {
	max := s.maxTasks()
	var overflow []gap.Gap
	for i := range selected {
		g := &selected[i]
		role := s.role(g.Kind)
		if role.Group {
			if j := findRole(dst, role.Name); j >= 0 {
				dst[j].Gaps = append(dst[j].Gaps[:len(dst[j].Gaps):len(dst[j].Gaps)], *g)
				continue
			}
		}
		if len(dst) >= max {
			overflow = append(overflow, *g)
			continue
		}
		// Set the task in its slot rather than copy a Task built aside.
		dst = append(dst, Task{})
		t := &dst[len(dst)-1]
		t.Action, t.Role, t.Gaps = action, role.Name, selected[i:i+1:i+1]
		t.Feedback, t.Guidance = fb, guidance
	}
	if len(s.Roles) == 0 {
		// The default roles have no prompt template: every prompt is
		// empty, without looking the roles up again.
		for i := range dst {
			dst[i].Prompt = ""
		}
	} else {
		for i := range dst {
			dst[i].Prompt = render(s.role(dst[i].Gap().Kind), dst[i].Gaps)
		}
	}
	if len(overflow) > 0 {
		deferred = append(overflow, deferred...)
	}
	return dst, deferred
}

func findRole(ts []Task, name RoleName) int {
	for i := range ts {
		if ts[i].Role == name {
			return i
		}
	}
	return -1
}

// render fills a role's prompt template for its gaps.
func render(role Role, gaps []gap.Gap) string {
	p := role.Prompt
	if len(gaps) == 0 || !strings.Contains(p, "{") {
		return p
	}
	g := gaps[0]
	detail := detailOf(&g)
	if len(gaps) > 1 {
		parts := make([]string, len(gaps))
		for i := range gaps {
			parts[i] = detailOf(&gaps[i])
		}
		detail = strings.Join(parts, "; ")
	}
	focus := strings.Join(g.Focus, ", ")
	if focus == "" {
		focus = g.Target
	}
	return strings.NewReplacer("{target}", g.Target, "{detail}", detail, "{focus}", focus).Replace(p)
}

// The escalation ladder: the actions tried, in order, while the same
// triggers persist.
var ladder = [...]Action{Retry, Refine, Simplify, Expand}

// choose picks the action (seed 001's selectIterationStrategy with the
// graduated escalation on top).
func (s *Adaptive) choose(sit *Situation, persist int, tried actionSet) (Action, string, []string) {
	if persist >= s.stuckAfter() {
		switch {
		case sit.AnsweredAt > 0:
			return Stop, fmt.Sprintf("stuck: the same problems persisted for %d attempts after the human's answer", persist), nil
		case s.EscalateAfter > 0:
			return Escalate, fmt.Sprintf("the same problems persisted for %d attempts", persist), nil
		}
		return Stop, fmt.Sprintf("stuck: the same problems persisted for %d attempts", persist), nil
	}
	var last Action
	if sit.Last != nil {
		last = sit.Last.Action
	} else if r := sit.History.Last(); r != nil {
		last = Action(r.Action)
	}
	if persist > 0 {
		// Seed 001: same triggers after a retry → refine.
		if last == Retry && !tried.has(Refine) {
			return Refine, "the same triggers survived a retry: refine", []string{"Focus on specific issues identified", "Increase detail (x1.5)"}
		}
		for _, a := range ladder {
			if a != last && !tried.has(a) {
				return a, fmt.Sprintf("the same triggers survived %s: switch to %s", last, a), guidanceFor(a)
			}
		}
		if s.EscalateAfter > 0 {
			return Escalate, fmt.Sprintf("every strategy failed on the same problems (%d attempts)", persist), nil
		}
		return Stop, fmt.Sprintf("stuck: every strategy failed on the same problems (%d attempts)", persist), nil
	}

	kinds := kindsOf(sit.History.Gaps)
	switch {
	case kinds&validationKinds != 0:
		return Retry, "validation failures: retry with fixes", []string{"Fix the validation errors", "Follow the expected schema"}
	case kinds&confidenceKinds != 0:
		return Expand, "low confidence: expand with more evidence", []string{"Provide more evidence and reasoning", "Cite sources"}
	case kinds&hallucinationKinds != 0:
		return Retry, "hallucinations detected: retry with verification", []string{"Verify all factual claims before including", "Remove unverified claims"}
	case s.EscalateNearLimit && sit.History.Remaining() >= 0 && sit.History.Remaining() <= 1:
		return Escalate, "one iteration left with problems remaining", nil
	case kinds&conflictKinds != 0:
		return Refine, "conflicting findings: verify", []string{"Analyze all relevant sources and resolve the disagreement"}
	case kinds&coverageKinds != 0:
		return Expand, "coverage or context missing: expand the search", []string{"Do not re-analyze what is already covered"}
	}
	return Retry, "address the identified issues", []string{"Address the identified issues"}
}

func guidanceFor(a Action) []string {
	switch a {
	case Refine:
		return []string{"Focus on specific issues identified", "Increase detail (x1.5)"}
	case Simplify:
		return []string{"Reduce the scope to the essential fix", "Prefer the simplest change that passes"}
	case Expand:
		return []string{"Provide more evidence and reasoning", "Consider alternative approaches"}
	}
	return []string{"Address the identified issues"}
}

// persistence counts the consecutive attempts (since the latest human
// answer) after which the current triggers were found again, and which
// actions those attempts took.
func persistence(sit *Situation) (int, actionSet) {
	h := sit.History
	recs := h.Recent
	if len(recs) < 2 {
		return 0, 0
	}
	cur := &recs[len(recs)-1]
	if cur.Triggers == 0 {
		return 0, 0
	}
	n := 0
	var tried actionSet
	for i := len(recs) - 2; i >= 0; i-- {
		if recs[i].Triggers != cur.Triggers || recs[i+1].Iteration <= sit.AnsweredAt {
			break
		}
		n++
		tried = tried.add(Action(recs[i+1].Action))
	}
	return n, tried
}

type actionSet uint8

func actionBit(a Action) actionSet {
	switch a {
	case Retry:
		return 1
	case Refine:
		return 2
	case Expand:
		return 4
	case Simplify:
		return 8
	}
	return 0
}

func (s actionSet) add(a Action) actionSet { return s | actionBit(a) }
func (s actionSet) has(a Action) bool      { return s&actionBit(a) != 0 }

// kindSet holds the groups of gap kinds that choose tells apart, one bit
// each, so that the gaps are read once rather than once per kind asked.
type kindSet uint8

const (
	validationKinds    kindSet = 1 << iota // ValidationFailure
	confidenceKinds                        // LowConfidence, Confidence, Evidence, Pattern
	hallucinationKinds                     // Hallucination
	conflictKinds                          // ConflictingFindings
	coverageKinds                          // Coverage, MissingContext, UnansweredQuestion, Security, Performance
)

// kindsOf returns the groups of the kinds of gaps.
func kindsOf(gaps []gap.Gap) kindSet {
	var s kindSet
	for i := range gaps {
		switch gaps[i].Kind {
		case gap.ValidationFailure:
			s |= validationKinds
		case gap.LowConfidence, gap.Confidence, gap.Evidence, gap.Pattern:
			s |= confidenceKinds
		case gap.Hallucination:
			s |= hallucinationKinds
		case gap.ConflictingFindings:
			s |= conflictKinds
		case gap.Coverage, gap.MissingContext, gap.UnansweredQuestion, gap.Security, gap.Performance:
			s |= coverageKinds
		}
	}
	return s
}

// escalation builds the escalate plan.
func (s *Adaptive) escalation(sit *Situation, reason string) Plan {
	esc := buildEscalation(sit.History, reason, s.feedbackLimit())
	return Plan{Action: Escalate, Reason: reason, Escalation: esc, Feedback: esc.Feedback}
}

// buildEscalation assembles seed 002's escalation from a history: a summary
// of every attempt in the history window, the pattern detected (the problem
// found most often across the attempts), the consolidated feedback of the
// open gaps, and the question for the human.
func buildEscalation(h *converge.History, reason string, feedbackLimit int) *Escalation {
	esc := &Escalation{Iteration: h.Iteration, Reason: reason}
	counts := map[string]int{}
	for i := range h.Recent {
		r := &h.Recent[i]
		if r.Iteration == 0 {
			continue
		}
		line := "Iteration " + strconv.Itoa(r.Iteration) + ": "
		if r.Action != "" {
			line += r.Action + ", "
		}
		switch {
		case r.Failed:
			line += "failed"
		case r.Gaps == 0:
			line += "no open problems"
		default:
			line += strconv.Itoa(r.Gaps) + " open problem(s)"
		}
		if r.Summary != "" {
			line += " - " + r.Summary
			counts[r.Summary]++
		}
		esc.Attempts = append(esc.Attempts, line)
	}
	best := 0
	for i := range h.Recent {
		s := h.Recent[i].Summary
		if c := counts[s]; c > best {
			best, esc.Pattern = c, s
		}
	}
	if esc.Pattern == "" && len(h.Gaps) > 0 {
		esc.Pattern = actionable(&h.Gaps[0])
	}
	esc.Feedback = synthesizeFeedback(h.Gaps, feedbackLimit).String()
	var q strings.Builder
	fmt.Fprintf(&q, "After %d attempt(s), ", h.Iteration)
	if esc.Pattern != "" {
		fmt.Fprintf(&q, "this problem persists: %s.", esc.Pattern)
	} else {
		q.WriteString("the work has not converged: " + reason + ".")
	}
	q.WriteString("\nHow should the loop proceed? Answer with guidance for the next attempt, or stop the session.")
	esc.Question = q.String()
	return esc
}
