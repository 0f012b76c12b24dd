package iterate

// This file holds the deadlines of questions (WithQuestionDeadline): what
// an escalation carries, the reminder, the answerer's extension and the
// expiry that Resume applies.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Expiry is what happens to a question that passes its deadline
// unanswered.
type Expiry string

const (
	// ExpireStop stops the session with status [Expired] (the zero
	// Expiry does the same).
	ExpireStop Expiry = "stop"
	// ExpireAnswer continues the session as if the human had answered
	// the question's Default.
	ExpireAnswer Expiry = "answer"
)

// Expired: a question passed its deadline unanswered under [ExpireStop].
// It is final: Resume returns the saved result.
const Expired Status = "expired"

// Deadline configures the deadline of every question the loop asks (see
// [WithQuestionDeadline]). The zero Deadline sets none.
type Deadline struct {
	// After is how long after the escalation the question expires.
	After time.Duration
	// RemindBefore is how long before the deadline a [QuestionReminder]
	// is due; 0 sends none. It must be less than After.
	RemindBefore time.Duration
	// OnExpiry is what happens when the deadline passes unanswered:
	// ExpireStop (or "") stops the session as Expired, ExpireAnswer
	// continues with Default as the answer.
	OnExpiry Expiry
	// Default is the answer given on expiry under ExpireAnswer.
	Default string
}

// WithQuestionDeadline gives every question the loop asks a human a
// deadline: the escalation carries it (Escalation.Deadline, OnExpiry,
// Default, RemindAt), it is saved with the question and survives
// restarts. Nothing waits for it: Resume enforces it. A Resume without
// an answer at or after the deadline applies d.OnExpiry (stop as
// [Expired], or continue with d.Default as the answer, sending a
// [QuestionExpired] either way); one at or after the reminder's time
// sends a [QuestionReminder] once and saves that it did; otherwise it
// returns the *EscalationError again. [Escalation.Due] tells a host
// that keeps a process when to call Resume next. The answerer may move
// the deadline with [ExtendDeadline].
//
// The deadline's length, its expiry and default answer are part of the
// settings that guard Resume (they decide how the session goes on); the
// reminder's lead is not. A strategy may set a deadline on its own
// escalation: the engine fills only the fields it leaves zero.
func WithQuestionDeadline(d Deadline) Option {
	return optionFunc(func(c *config) {
		switch {
		case d.After <= 0:
			c.invalid("WithQuestionDeadline", "After must be positive, got "+d.After.String())
		case d.RemindBefore < 0 || d.RemindBefore >= d.After:
			c.invalid("WithQuestionDeadline", "RemindBefore must be in [0, After), got "+d.RemindBefore.String())
		case d.OnExpiry != "" && d.OnExpiry != ExpireStop && d.OnExpiry != ExpireAnswer:
			c.invalid("WithQuestionDeadline", "unknown OnExpiry "+strconv.Quote(string(d.OnExpiry)))
		default:
			if d.OnExpiry == "" {
				d.OnExpiry = ExpireStop
			}
			c.deadline = d
		}
	})
}

// DeadlineExtension is one move of a question's deadline by its answerer
// (see [ExtendDeadline]).
type DeadlineExtension struct {
	By   string    `json:"by,omitempty"`
	At   time.Time `json:"at"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// ExtendDeadline moves the deadline of the escalated session's question
// to the time to, later than its deadline; by names who did (recorded in
// Escalation.Extensions). The reminder moves with it, keeping its lead,
// and is sent again when due. Resume saves the question and returns the
// *EscalationError with the new deadline; it runs nothing. An extension
// given after the deadline passed still extends it, unless a Resume has
// applied the expiry already. With [WithAnswer] it is ignored: the
// question is answered. Of a session that is not escalated, or to a time
// not after the deadline, it is a *ConfigError.
func ExtendDeadline(to time.Time, by string) ResumeOption {
	return resumeFunc(func(c *resumeConfig) { c.deadlineTo, c.deadlineBy, c.hasDeadline = to, by, true })
}

// Due returns when Resume next has something to do for the question
// unanswered: its reminder's time while the reminder is unsent, then its
// deadline; zero with neither. A host that keeps a process waits until
// then and calls Resume again.
func (e *Escalation) Due() time.Time {
	if e == nil {
		return time.Time{}
	}
	if !e.RemindAt.IsZero() && e.Reminded.IsZero() && (e.Deadline.IsZero() || e.RemindAt.Before(e.Deadline)) {
		return e.RemindAt
	}
	return e.Deadline
}

// QuestionReminder is sent by the Resume that finds an unanswered
// question past its reminder's time (Escalation.RemindAt) and before its
// deadline, once per question (and once more after each extension): a
// host routes it to chat or mail.
type QuestionReminder struct {
	it
	Escalation *Escalation
	// Deadline is the question's; Time, when the reminder was sent.
	Deadline time.Time
	Time     time.Time
}

// QuestionExpired is sent by the Resume that finds an unanswered
// question past its deadline. Answer is the default answer the session
// continues with under ExpireAnswer; under ExpireStop the session ends
// as Expired.
type QuestionExpired struct {
	it
	Escalation *Escalation
	OnExpiry   Expiry
	Answer     string
	Deadline   time.Time
	Time       time.Time
}

// applyDeadline gives the escalation esc, new, the engine's deadline: the
// fields the strategy left zero. It returns a copy when the engine has a
// deadline (the strategy's value is not modified), else esc.
func (r *run[S]) applyDeadline(esc *Escalation) *Escalation {
	d := r.cfg.deadline
	if d.After <= 0 {
		return esc
	}
	e := *esc
	if e.Deadline.IsZero() {
		e.Deadline = time.Now().Add(d.After)
	}
	if e.OnExpiry == "" {
		e.OnExpiry, e.Default = d.OnExpiry, d.Default
	}
	if e.RemindAt.IsZero() && d.RemindBefore > 0 {
		e.RemindAt = e.Deadline.Add(-d.RemindBefore)
	}
	return &e
}

// unanswered is Resume of an escalated session without an answer: it
// moves the deadline (ExtendDeadline), applies the expiry past it, or
// sends the reminder when due. It returns the result to return, or nil
// when the session goes on with the default answer (set in rc).
func (r *run[S]) unanswered(ctx context.Context, reason string, rc *resumeConfig) (*Result[S], error) {
	if r.data.Escalation == nil {
		r.data.Escalation = &Escalation{Iteration: r.hist.Iteration, Reason: reason}
	}
	e := *r.data.Escalation // modified on a copy: a Result may hold the old one
	r.data.Escalation = &e
	now := time.Now()
	switch {
	case rc.hasDeadline:
		if !e.Deadline.IsZero() && !rc.deadlineTo.After(e.Deadline) {
			return nil, &ConfigError{Option: "ExtendDeadline", Reason: fmt.Sprintf("%v is not after the deadline %v", rc.deadlineTo, e.Deadline)}
		}
		if !e.RemindAt.IsZero() && !e.Deadline.IsZero() {
			e.RemindAt = rc.deadlineTo.Add(e.RemindAt.Sub(e.Deadline))
			if e.RemindAt.After(now) {
				e.Reminded = time.Time{} // due again
			}
		}
		e.Extensions = append(e.Extensions, DeadlineExtension{By: rc.deadlineBy, At: now, From: e.Deadline, To: rc.deadlineTo})
		e.Deadline = rc.deadlineTo
		if err := r.saveQuestion(ctx, reason); err != nil {
			return nil, err
		}
	case !e.Deadline.IsZero() && !now.Before(e.Deadline):
		ev := QuestionExpired{it: r.at(r.hist.Iteration), Escalation: &e, OnExpiry: e.OnExpiry, Deadline: e.Deadline, Time: now}
		if e.OnExpiry == ExpireAnswer {
			ev.Answer = e.Default
			r.emit(ev)
			r.warn(r.hist.Iteration, fmt.Sprintf("question unanswered by its deadline %v: continuing with the default answer", e.Deadline))
			rc.answer, rc.hasAnswer = e.Default, true
			return nil, nil
		}
		r.emit(ev)
		why := fmt.Sprintf("question unanswered by its deadline %v: %s", e.Deadline.Format(time.RFC3339), e.Reason)
		if err := r.save(ctx, Expired, why); err != nil && r.fatalSave(err) {
			return nil, fmt.Errorf("iterate: session %q: saving the expiry: %w", r.cfg.session, err)
		}
		res := r.result(Expired, why, nil)
		res.Escalation = &e
		return res, nil
	case !e.RemindAt.IsZero() && e.Reminded.IsZero() && !now.Before(e.RemindAt):
		e.Reminded = now
		r.emit(QuestionReminder{it: r.at(r.hist.Iteration), Escalation: &e, Deadline: e.Deadline, Time: now})
		if err := r.saveQuestion(ctx, reason); err != nil {
			return nil, err
		}
	}
	res := r.result(Escalated, reason, nil)
	res.Escalation = &e
	err := &EscalationError{Escalation: &e}
	res.Err = err
	return res, err
}

// saveQuestion saves the escalated session again, its question changed.
func (r *run[S]) saveQuestion(ctx context.Context, reason string) error {
	if err := r.save(ctx, Escalated, reason); err != nil && r.fatalSave(err) {
		return fmt.Errorf("iterate: session %q: saving the question: %w", r.cfg.session, err)
	}
	return nil
}

// checkQuestionOptions refuses ExtendDeadline of a session not escalated.
func checkQuestionOptions(status Status, rc *resumeConfig) error {
	if rc.hasDeadline && status != Escalated {
		return &ConfigError{Option: "ExtendDeadline", Reason: "the session is " + string(status) + ", not escalated"}
	}
	return nil
}

// deadlineSetting is WithQuestionDeadline's setting, when set: what
// decides how the session goes on (not the reminder's lead).
func deadlineSetting(c *config) (setting, bool) {
	d := c.deadline
	if d.After <= 0 {
		return setting{}, false
	}
	v := d.After.String() + ", then " + string(d.OnExpiry)
	if d.OnExpiry == ExpireAnswer {
		v += " " + strconv.Quote(d.Default)
	}
	return setting{"question deadline", v}, true
}

// deadline encodes the deadline fields of an escalation (see escalation).
func (j *jsonBuf) deadline(e *Escalation) {
	if e.Deadline.IsZero() && e.OnExpiry == "" && e.Default == "" && e.RemindAt.IsZero() && e.Reminded.IsZero() && len(e.Extensions) == 0 {
		return
	}
	if !e.Deadline.IsZero() {
		j.key("deadline")
		j.time(e.Deadline)
	}
	if e.OnExpiry != "" {
		j.key("on_expiry")
		j.str(string(e.OnExpiry))
	}
	if e.Default != "" {
		j.key("default")
		j.str(e.Default)
	}
	if !e.RemindAt.IsZero() {
		j.key("remind_at")
		j.time(e.RemindAt)
	}
	if !e.Reminded.IsZero() {
		j.key("reminded")
		j.time(e.Reminded)
	}
	if len(e.Extensions) > 0 {
		j.key("extensions")
		j.marshal(e.Extensions)
	}
}

// marshal appends encoding/json's encoding of v: for the rare, small
// fields.
func (j *jsonBuf) marshal(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		j.err = errors.Join(j.err, err)
		return
	}
	j.b = append(j.b, b...)
}
