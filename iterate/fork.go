package iterate

// This file starts a session from a kept generation of another (ForkFrom).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/refine-go/refine/checkpoint"
)

// ForkFrom makes Resume start the engine's session (see [WithSession]) as
// a fork of generation gen of the session named session: a new session
// that continues from that generation's state, convergence history,
// counters, budget usage and best state (see [WithKeepBest]) as they were
// when it was saved, under the engine's own settings. The forked session is
// only read, never locked or modified, and its fingerprint does not matter:
// a fork is the sanctioned way to go on under other settings, and needs no
// [AllowSettingsChange].
//
// With [WithState] the fork starts from that state instead of the saved
// one (a human's edit); the generation's journaled tasks are then dropped,
// and so is a task's report that the work is done. With [WithAnswer] the
// answer goes to the tasks of the fork's first iteration (a hint), and,
// when the generation is an escalation, opens a fresh allowance of
// iterations, as a resume's answer does. Whatever the generation's status
// (running, interrupted, escalated, or a stop), the fork iterates: its own
// policies decide when it stops.
//
// Every checkpoint of the fork records session and gen in its
// [checkpoint.Checkpoint.Origin], so that listings can show its lineage;
// its generations are numbered as a Run's are, after any the session
// already has (and [RefuseResumable] applies). The engine's session must
// differ from session.
//
// A fork needs a checkpointer that is a [GenerationLoader]; with another,
// Resume returns an *UnsupportedError (matching errors.ErrUnsupported). A
// generation that is not kept gives an error matching
// checkpoint.ErrNotFound.
func ForkFrom(session string, gen uint64) ResumeOption {
	return resumeFunc(func(c *resumeConfig) {
		c.fork = &forkConfig{session: session, generation: gen}
	})
}

// WithState gives a fork ([ForkFrom]) the state to start from, in place of
// the forked generation's. Its type must be the engine's state type; Resume
// returns a *ConfigError otherwise, or without ForkFrom.
func WithState[S any](s S) ResumeOption {
	return resumeFunc(func(c *resumeConfig) { c.state, c.hasState = s, true })
}

// forkConfig is what ForkFrom asks for.
type forkConfig struct {
	session    string
	generation uint64
}

// UnsupportedError reports a checkpointer that lacks a capability an
// operation needs, such as a fork's [GenerationLoader]. It matches
// errors.ErrUnsupported.
type UnsupportedError struct {
	// Op is the operation, e.g. "fork"; Needs names the capability, e.g.
	// "GenerationLoader"; Checkpointer is the checkpointer's type.
	Op, Needs, Checkpointer string
}

// Error describes the error.
func (e *UnsupportedError) Error() string {
	return "iterate: " + e.Op + " needs a checkpointer that is a " + e.Needs + ", and " + e.Checkpointer + " is not"
}

// Is reports whether target is errors.ErrUnsupported.
func (e *UnsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }

// checkFork validates a resume's fork options against the engine.
func (e *engine[S]) checkFork(rc *resumeConfig) error {
	if rc.hasState {
		if rc.fork == nil {
			return &ConfigError{Option: "WithState", Reason: "needs ForkFrom: only a fork starts from another state"}
		}
		if _, ok := rc.state.(S); !ok {
			var zero S
			return &ConfigError{Option: "WithState", Reason: fmt.Sprintf("a state of type %T, the engine's is %T", rc.state, zero)}
		}
	}
	if rc.fork == nil {
		return nil
	}
	f := rc.fork
	if err := checkpoint.ValidateSession(f.session); err != nil {
		return &ConfigError{Option: "ForkFrom", Reason: "invalid session name", Err: err}
	}
	if f.session == e.cfg.session {
		return &ConfigError{Option: "ForkFrom", Reason: fmt.Sprintf("the fork's own session (WithSession) is %q, the session forked: a fork is a new session", f.session)}
	}
	if f.generation == 0 {
		return &ConfigError{Option: "ForkFrom", Reason: "generation 0: name a kept generation (see GenerationLoader)"}
	}
	if _, ok := e.cfg.checkpointer.(GenerationLoader); !ok {
		return &UnsupportedError{Op: "fork", Needs: "GenerationLoader", Checkpointer: fmt.Sprintf("%T", e.cfg.checkpointer)}
	}
	return nil
}

// fork is Resume with ForkFrom: r starts the engine's session from the
// forked generation.
func (r *run[S]) fork(ctx context.Context, rc *resumeConfig) (*Result[S], error) {
	e, f := r.e, rc.fork
	var zero S
	release, err := r.lock(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return notStarted(zero, ctx)
		}
		return nil, err
	}
	defer release()
	gl := e.cfg.checkpointer.(GenerationLoader) // checked by checkFork
	src, err := storeLoadGeneration(ctx, gl, f.session, f.generation)
	if err != nil {
		if ctx.Err() != nil {
			return notStarted(zero, ctx)
		}
		return nil, fmt.Errorf("iterate: fork of session %q generation %d: %w", f.session, f.generation, err)
	}
	if err := r.restore(ctx, src); err != nil {
		return nil, err
	}
	// The fork is a session of its own: its generations follow its own,
	// and no generation of it holds the restored state or the best yet.
	r.generation, r.savedGen = 0, 0
	if res, err := r.followLatest(ctx, zero); res != nil || err != nil {
		return res, err
	}
	if b := r.data.Best; b != nil && b.Generation != 0 {
		nb := *b
		nb.Generation = 0
		r.data.Best = &nb
	}
	r.origin = checkpoint.Origin{Session: f.session, Generation: src.Generation}
	if rc.hasState {
		r.state = rc.state.(S) // checked by checkFork
		r.journal.entries = nil
		r.data.Complete = false
	}
	r.data.Escalation = nil
	if rc.hasAnswer {
		r.data.Answer = rc.answer
		if Status(src.Status) == Escalated {
			r.data.AnsweredAt = r.hist.Iteration
		}
	}
	r.applyLimit()
	if r.observing {
		r.emit(LoopStarted{it: r.at(r.hist.Iteration), Session: e.cfg.session, Context: ctx, MaxIterations: r.hist.MaxIterations,
			Resumed: true, Completed: r.hist.Iteration, Elapsed: r.data.Elapsed, Time: time.Now(), StartedAt: r.data.StartedAt,
			ConsecutiveFailures: r.hist.ConsecutiveFailures, FailureThreshold: e.cfg.failureThreshold,
			Durations: append([]time.Duration(nil), r.durations.values()...), LastIterationAt: r.data.LastIterationAt})
	}
	if ce := r.check(zap.InfoLevel, "loop forked"); ce != nil {
		ce.Write(zap.String("session", e.cfg.session), zap.String("from_session", f.session), zap.Uint64("from_generation", src.Generation),
			zap.Int("iteration", r.hist.Iteration), zap.String("from_status", src.Status))
	}
	return r.drive(ctx)
}
