package iterate

// This file holds what the engine keeps of a run: the resume record, the
// session lock, loading and restoring, and saving with retries.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// engineData is the engine's resume record: everything a resumed run needs
// beyond the checkpoint's envelope and state, encoded once per save into
// Checkpoint.Engine. The run works on it directly, so a new resume field is
// one line here.
type engineData struct {
	// Version is recordVersion when saved; a record of another version is
	// refused by name rather than misread.
	Version         int               `json:"v"`
	Settings        []setting         `json:"settings"`
	StartedAt       time.Time         `json:"started_at"`
	LastIterationAt time.Time         `json:"last_iteration_at,omitzero"`
	Elapsed         time.Duration     `json:"elapsed,omitempty"`
	Durations       []time.Duration   `json:"durations,omitempty"`
	Usage           budget.Usage      `json:"usage"`
	Completed       budget.Usage      `json:"completed,omitzero"` // what completed iterations spent: the default estimate's
	History         *converge.History `json:"history,omitempty"`
	Gaps            []gap.Gap         `json:"gaps,omitempty"`
	Journal         []entry           `json:"journal,omitempty"`
	Complete        bool              `json:"complete,omitempty"` // a task said the work is done
	AnsweredAt      int               `json:"answered_at,omitempty"`
	Answer          string            `json:"answer,omitempty"`
	Escalation      *Escalation       `json:"escalation,omitempty"`
	Unresolved      []gap.Gap         `json:"unresolved,omitempty"`
	Totals          Totals            `json:"totals"`
	Decision        converge.Decision `json:"decision"`
	Best            *bestRecord       `json:"best,omitempty"` // WithKeepBest's
	Extensions      []Extension       `json:"extensions,omitempty"`
	// StateVersion is the version of the state type S the checkpoint's
	// states are encoded under (see WithStateVersion).
	StateVersion int `json:"state_version,omitempty"`
	// InFlight and Crashes are WithCrashLoopBound's: the tasks running
	// when the checkpoint was saved, and how many resumes found each in
	// flight after a crash.
	InFlight []crashCount `json:"in_flight,omitempty"`
	Crashes  []crashCount `json:"crashes,omitempty"`
}

// recordVersion is the version of engineData that this engine writes.
const recordVersion = 1

// noRelease releases no lock. (A func literal in lock, a generic method,
// would be allocated at every call.)
func noRelease() {}

func (r *run[S]) lock(ctx context.Context) (func(), error) {
	l, ok := r.cfg.checkpointer.(Locker)
	if !ok {
		return noRelease, nil
	}
	token, release, err := storeLock(ctx, l, r.cfg.session)
	if err != nil {
		return nil, fmt.Errorf("iterate: session %q: %w", r.cfg.session, err)
	}
	r.token = token
	return func() {
		if err := storeRelease(release); err != nil {
			r.log.Warn("releasing the session lock failed", zap.String("session", r.cfg.session), zap.Error(err))
		}
	}, nil
}

// latest loads the session's latest checkpoint, if any, so that a new run
// continues its generation numbering and never overwrites an earlier run's
// checkpoints. A session whose every checkpoint is damaged is warned about
// and started afresh (seed 004); the damaged files stay, and the warning
// with them, until the host removes the session. Any other failure to load
// (a newer format, a permission, an I/O error) stops the run: starting over
// would hide, and pruning could delete, checkpoints that may be good.
func (r *run[S]) latest(ctx context.Context) (*checkpoint.Checkpoint, error) {
	if r.cfg.checkpointer == nil {
		return nil, nil
	}
	c, err := storeLoad(ctx, r.cfg.checkpointer, r.cfg.session)
	switch {
	case err == nil:
		r.recovered(c)
		return c, nil
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, nil
	case errors.Is(err, checkpoint.ErrCorrupt):
		r.warn(0, fmt.Sprintf("previous checkpoint of session %q unreadable, starting fresh: %v", r.cfg.session, err))
		return nil, nil
	default:
		return nil, fmt.Errorf("iterate: session %q: loading its latest checkpoint: %w", r.cfg.session, err)
	}
}

// recovered reports a load that fell back past damaged generations.
func (r *run[S]) recovered(c *checkpoint.Checkpoint) {
	if len(c.Skipped) == 0 {
		return
	}
	r.warn(0, fmt.Sprintf("checkpoint generations %v of session %q damaged; fell back to generation %d", c.Skipped, r.cfg.session, c.Generation))
	r.emit(Recovered{it: r.at(0), Generation: c.Generation, Skipped: slices.Clone(c.Skipped)})
}

func (r *run[S]) restore(ctx context.Context, c *checkpoint.Checkpoint) error {
	corrupt := func(what string, err error) error {
		return fmt.Errorf("iterate: resume session %q: decoding %s: %w", r.cfg.session, what,
			&checkpoint.CorruptError{Generation: c.Generation, Err: err})
	}
	if err := json.Unmarshal(c.Engine, &r.data); err != nil {
		return corrupt("engine record", err)
	}
	if r.data.Version != recordVersion {
		return fmt.Errorf("iterate: resume session %q: engine record version %d, this engine reads version %d: %w",
			r.cfg.session, r.data.Version, recordVersion, checkpoint.ErrVersion)
	}
	state := c.State
	if saved := r.data.StateVersion; saved != r.cfg.stateVersion {
		// The checkpoint's bytes are not touched: migrated copies.
		var err error
		if state, err = r.migrate(ctx, saved, state); err != nil {
			return err
		}
		if err := r.migrateRecord(ctx, saved); err != nil {
			return err
		}
	}
	r.data.StateVersion = r.cfg.stateVersion // what the run's saves write
	var s S
	if err := unmarshal(r.cfg.codec, state, &s); err != nil {
		return corrupt("state", err)
	}
	r.state = s
	if r.data.History != nil {
		r.hist = *r.data.History
	}
	r.data.History = nil
	r.hist.Gaps = r.data.Gaps // not part of the saved history: the record has them
	r.configureHistory()
	if r.budget != nil {
		r.budget.Restore(r.data.Usage)
	}
	r.spent = r.data.Usage
	if r.data.Completed.Iterations == 0 && r.data.Usage.Iterations > 0 {
		// A record without it (written before it was kept): as before,
		// everything spent counts as the completed iterations'.
		r.data.Completed = r.data.Usage
	}
	r.generation = newestGeneration(c)
	r.savedGen, r.savedIter = c.Generation, c.Iteration
	r.origin = c.Origin
	if r.cfg.keepBest == nil {
		r.data.Best = nil // kept no further, and saved no more
	}
	r.durations.set(r.data.Durations)
	r.decision = r.data.Decision
	r.sit.Unresolved = r.data.Unresolved
	for _, e := range r.data.Journal {
		if e.Iteration == c.Iteration+1 {
			r.journal.entries = append(r.journal.entries, e)
		}
	}
	r.data.Journal = nil
	return nil
}

// newestGeneration returns the newest generation of c's session a store
// has seen as c was loaded: c's own, or a damaged newer one it skipped.
// Stores number a save above both, so the next save's generation is one
// above it, as the engine reports it (events, the best's generation).
func newestGeneration(c *checkpoint.Checkpoint) uint64 {
	g := c.Generation
	for _, s := range c.Skipped {
		g = max(g, s)
	}
	return g
}

// configureHistory hands the loop's settings to the convergence history,
// where the policies read them.
func (r *run[S]) configureHistory() {
	r.hist.Window = r.cfg.window
	r.hist.MaxIterations = r.cfg.maxIterations
	r.hist.Thresholds = r.cfg.thresholds
	r.hist.FailureThreshold = r.cfg.failureThreshold
}

// storageFailed ends the run because a checkpoint could not be saved (under
// Strict, after retries) or the session's lock was lost. It
// saves nothing more: the session's latest checkpoint stays the last good
// one, so that Resume continues from it once the fault is gone, and a
// writer that lost its lock leaves the session to its new holder.
func (r *run[S]) storageFailed(ctx context.Context, err error) (*Result[S], error) {
	r.saveFailed = true
	r.lastErr = err
	return r.stop(ctx, Failed, "checkpoint failed: "+err.Error())
}

// save writes a checkpoint; failures are warnings unless strict.
func (r *run[S]) save(ctx context.Context, status Status, reason string) error {
	var start time.Time
	if r.observing {
		start = time.Now()
	}
	err := r.saveRetrying(ctx, status, reason, r.journal.entries)
	if err != nil {
		r.warn(r.hist.Iteration, fmt.Sprintf("checkpoint of session %q not saved: %v", r.cfg.session, err))
	}
	if r.observing {
		r.emit(CheckpointSaved{it: r.at(r.hist.Iteration), Session: r.cfg.session, Generation: r.generation, Status: status,
			Completed: r.hist.Iteration, Err: err,
			Duration: time.Since(start), Bytes: r.savedBytes()})
		r.sendSuperseded()
	}
	return err
}

// saver is what a run's saves reuse: the encoder of the resume record and
// the checkpoint given to the store, whose Engine bytes are the encoder's
// (stores copy what they keep). Saves never overlap: the loop's run while
// no task does, and the journal's, from tasks, hold the journal's lock.
type saver struct {
	enc   recordEncoder
	c     checkpoint.Checkpoint
	state stateEncoder
	bytes int64 // of engine record and state, given to the store by the last save
}

// savedBytes returns the bytes the last save gave the store, 0 before any.
func (r *run[S]) savedBytes() int64 {
	if r.saver == nil {
		return 0
	}
	return r.saver.bytes
}

// Strict saves are retried this many times in all, waiting saveBackoff,
// then twice as long, between attempts: a transient fault (a full disk
// freed, a dropped connection) should not end a run.
const (
	saveAttempts = 3
	saveBackoff  = 50 * time.Millisecond
)

// saveRetrying saves, retrying a strict save that failed for a reason other
// than a lost lock or the context's end.
func (r *run[S]) saveRetrying(ctx context.Context, status Status, reason string, journal []entry) error {
	wait := saveBackoff
	for attempt := 1; ; attempt++ {
		err := r.trySave(ctx, status, reason, journal)
		if err == nil || r.cfg.persist&Strict == 0 || attempt == saveAttempts || errors.Is(err, checkpoint.ErrFenced) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// fatalSave reports whether a failed save must end the run: under
// Strict, and always when the session's lock was lost.
func (r *run[S]) fatalSave(err error) bool {
	return err != nil && (r.cfg.persist&Strict != 0 || errors.Is(err, checkpoint.ErrFenced))
}

func (r *run[S]) trySave(ctx context.Context, status Status, reason string, journal []entry) error {
	store, streams := r.cfg.checkpointer.(StreamSaver)
	codec, encodes := r.cfg.codec.(StreamCodec)
	var state []byte
	if !streams || !encodes {
		var err error
		if state, err = marshal(r.cfg.codec, r.state); err != nil {
			return fmt.Errorf("encoding state: %w", err)
		}
	}
	c, err := r.encodeSave(status, reason, journal, state)
	if err != nil {
		return err
	}
	if streams && encodes {
		enc := &r.saver.state
		*enc = stateEncoder{codec: codec, v: r.state}
		err = storeSaveFrom(ctx, store, c, enc)
		r.saver.bytes = int64(len(c.Engine)) + enc.cw.n
		if enc.err != nil {
			err = fmt.Errorf("encoding state: %w", enc.err)
		}
		*enc = stateEncoder{} // keeps neither the state nor the store's writer
	} else {
		err = storeSave(ctx, r.cfg.checkpointer, c)
		c.State = nil // the saver keeps no state until the next save
	}
	return r.saved(ctx, c, err)
}

// encodeSave returns the checkpoint of a save: the engine's record, with
// journal, encoded, and state, the state's encoding (nil when the store
// streams it). The checkpoint and its Engine bytes are the saver's,
// reused by the next save.
func (r *run[S]) encodeSave(status Status, reason string, journal []entry, state []byte) (*checkpoint.Checkpoint, error) {
	d := r.data // a shallow copy: the saved-only fields are set on it
	d.Version = recordVersion
	d.Settings = r.settings
	d.Durations = r.durations.values()
	d.Usage = r.usage()
	d.History = &r.hist
	d.Gaps = r.hist.Gaps
	d.Journal = journal
	d.Decision = r.decision
	if r.clock.lapped {
		d.LastIterationAt = r.clock.lastEnd()
	}
	if r.saver == nil {
		r.saver = new(saver)
	}
	data, err := r.saver.enc.encode(&d, r.durations.pushed)
	if err != nil {
		return nil, fmt.Errorf("encoding engine data: %w", err)
	}
	c := &r.saver.c
	*c = checkpoint.Checkpoint{
		Session:     r.cfg.session,
		Generation:  r.generation + 1,
		Token:       r.token,
		Iteration:   r.hist.Iteration,
		Status:      string(status),
		Reason:      reason,
		Time:        time.Now(),
		Fingerprint: r.fingerprint,
		Engine:      data,
		State:       state,
	}
	c.BestGeneration = r.bestGeneration()
	c.Origin = r.origin
	if status == Escalated && r.data.Escalation != nil {
		c.Question = r.data.Escalation.Question
	}
	r.saver.bytes = int64(len(data) + len(state))
	return c, nil
}

// saved records that the store saved c (when err is nil) and returns err.
func (r *run[S]) saved(ctx context.Context, c *checkpoint.Checkpoint, err error) error {
	if err != nil {
		return err
	}
	r.generation = c.Generation
	if r.cfg.keepBest != nil && !r.genSynced {
		r.syncGeneration(ctx, c)
	}
	r.savedGen, r.savedIter = r.generation, c.Iteration
	return nil
}

// marshal encodes v with codec, turning a panic of the codec into a
// *PanicError: a journal's save runs on a task's goroutine, where nothing
// else would recover it.
func marshal(codec Codec, v any) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, &PanicError{Where: "encode", Value: p, Stack: stack()}
		}
	}()
	return codec.Marshal(v)
}

// StreamSaver is implemented by a [Checkpointer] that can take a
// checkpoint's state as a stream, as [checkpoint.Dir] (straight into its
// file) and [checkpoint.Memory] do. SaveFrom saves c as Save would with
// c.State holding the bytes state.WriteTo writes; c.State is empty. It
// returns an error, and saves nothing, if the stream fails.
//
// With a [StreamCodec] (such as the default [JSON]) the engine saves through
// SaveFrom, encoding the state into the store; otherwise it calls Save with
// the bytes of the codec's Marshal.
type StreamSaver interface {
	SaveFrom(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error
}

var (
	_ StreamSaver = (*checkpoint.Memory)(nil)
	_ StreamSaver = (*checkpoint.Dir)(nil)
	_ StreamCodec = jsonCodec{}
)

// stateEncoder is the state stream of a save: it encodes v with codec, and
// keeps the codec's own error, as opposed to one of the store's writer, so
// that a save that fails encoding says so.
type stateEncoder struct {
	codec StreamCodec
	v     any
	err   error // the codec's error, not the writer's
	cw    countingWriter
}

// WriteTo encodes the state into w. A panic of the codec is recovered and
// kept as its error, a *PanicError: a journal's save runs on a task's
// goroutine, where nothing else would recover it.
func (e *stateEncoder) WriteTo(w io.Writer) (n int64, err error) {
	e.cw = countingWriter{w: w}
	defer func() {
		if v := recover(); v != nil {
			e.err = &PanicError{Where: "encode", Value: v, Stack: stack()}
			n, err = e.cw.n, e.err
		}
	}()
	err = e.codec.Encode(&e.cw, e.v)
	if err != nil && e.cw.err == nil {
		e.err = err
	}
	return e.cw.n, err
}

// countingWriter counts the bytes written to w and keeps its first error.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}
