package iterate

// This file keeps the best state a loop has seen (WithKeepBest).

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
)

// Scorer scores an assessment for [WithKeepBest]: the higher, the better.
// A NaN score is never the best. The infinities compare as numbers, as
// History.BestScore compares them: a state scored +Inf is the best until
// the end (nothing scores higher, and of equal scores the earliest is
// kept), one scored −Inf only while no other state has a score.
//
// The engine records a scorer's settings in the loop's fingerprint as it
// does a policy's: its Settings() string method when it has one, else its
// type and exported fields.
type Scorer interface {
	Score(a *gap.Assessment) float64
}

// ScorerFunc adapts a function to a [Scorer]. Its fingerprint is its type
// alone: give the function's version with [WithFingerprint] if it changes.
type ScorerFunc func(a *gap.Assessment) float64

// Score calls f(a).
func (f ScorerFunc) Score(a *gap.Assessment) float64 { return f(a) }

// ByMetric returns a [Scorer] that scores an assessment by the metric
// named name, as [gap.Assessment.Metric] names them ("coverage",
// "confidence", "score", "conflicts" or a key of Scores); an assessment
// without the metric scores NaN, never the best.
func ByMetric(name string) Scorer { return metricScorer(name) }

type metricScorer string

// Score returns the metric, or NaN when a does not have it.
func (m metricScorer) Score(a *gap.Assessment) float64 {
	if v, ok := a.Metric(string(m)); ok {
		return v
	}
	return math.NaN()
}

// Settings describes the scorer in the loop's settings.
func (m metricScorer) Settings() string { return "metric " + string(m) }

// WithKeepBest keeps the best state the loop has seen beside the last, in
// [Result.Best], with the iteration that produced it and its score. The
// score is by's, or, without one, the assessment's Score, the score
// History.BestScore and BestIteration track (so Result.Best.Iteration is
// History.BestIteration once a score is not NaN). More than one scorer is
// an invalid option.
//
// # What is best
//
// Every state the loop assesses is a candidate: the initial state
// (iteration 0) and the state after each completed iteration, assessed at
// the start of the next round. The best is the candidate with the highest
// score; of equal scores, the earliest. The best state is the state as it
// was assessed (a [Concluder] changes the last state, not the best).
//
// By stop status: a stop decided by the loop (Converged, EarlyExit,
// MaxIterations, Stuck, Plateau, Aborted, BudgetExhausted) and Escalated
// come after the assessment of the last state, so the last state was a
// candidate, and Result.Best is the best of every state, the last
// included (Result.Best.Iteration == Result.Iterations when the last is
// the best). Interrupted and Failed can end the loop after an iteration
// whose state was not yet assessed: that state is not a candidate (a
// Resume assesses it first); Result.Best is the best of the states
// assessed so far, and nil when none was (a loop interrupted before its
// first assessment).
//
// # How it is kept
//
// The engine keeps the best state encoded with the loop's [Codec], copied
// when a better one is found (so a worker that changes states in place
// cannot change it, and the option costs nothing while no better state
// turns up) and decoded into Result.Best. With a checkpointer it is saved
// in every checkpoint, so it survives an interruption, a crash and a
// resume exactly; the checkpoint also names, in its BestGeneration, the
// generation of the session whose state it is (which a store's retention
// can keep: see checkpoint.KeepBest). The option and its scorer are part
// of the settings a resume compares. A scorer that panics, and a state
// the codec cannot encode, are reported as warnings; the best stays as it
// was.
func WithKeepBest(by ...Scorer) Option {
	return optionFunc(func(c *config) {
		switch {
		case len(by) > 1:
			c.invalid("WithKeepBest", "more than one scorer")
			return
		case len(by) == 1 && by[0] == nil:
			c.invalid("WithKeepBest", "nil scorer")
			return
		}
		c.keepBest = &keepBest{}
		if len(by) == 1 {
			c.keepBest.by = by[0]
		}
	})
}

// keepBest is the configuration of WithKeepBest.
type keepBest struct {
	by Scorer // nil: the assessment's Score
}

// score scores a.
func (k *keepBest) score(a *gap.Assessment) float64 {
	if k.by == nil {
		return a.Score
	}
	return k.by.Score(a)
}

// settings describes k for the loop's settings.
func (k *keepBest) settings() string {
	if k.by == nil {
		return "score"
	}
	return describe(k.by)
}

// Best is the best state a loop has seen (see [WithKeepBest]).
type Best[S any] struct {
	// State is the best state, as it was assessed.
	State S
	// Iteration is the number of iterations completed when it was
	// assessed (0: the initial state).
	Iteration int
	// Score is its score.
	Score float64
}

// bestRecord is the best state as the engine keeps and saves it, in its
// resume record.
type bestRecord struct {
	Iteration int     `json:"iteration"`
	Score     float64 `json:"score"`
	// Generation is the generation of the session whose State is this
	// state, 0 if none is known.
	Generation uint64 `json:"generation,omitempty"`
	// State is the state encoded with the loop's codec.
	State []byte `json:"state"`
}

// observeBest considers the state just assessed as a, after the history
// observed it.
func (r *run[S]) observeBest(a *gap.Assessment) {
	score, err := func() (v float64, err error) {
		defer recoverInto(&err, "score")
		return r.cfg.keepBest.score(a), nil
	}()
	if err != nil {
		r.warn(r.hist.Iteration, fmt.Sprintf("keep best: scoring: %v", err))
		return
	}
	if math.IsNaN(score) {
		return
	}
	if b := r.data.Best; b != nil && !(score > b.Score) {
		return
	}
	data, err := marshal(r.cfg.codec, r.state)
	if err != nil {
		r.warn(r.hist.Iteration, fmt.Sprintf("keep best: encoding the state: %v", err))
		return
	}
	b := &bestRecord{Iteration: r.hist.Iteration, Score: score, State: data}
	if r.savedGen != 0 && r.savedIter == r.hist.Iteration {
		b.Generation = r.savedGen
	}
	r.data.Best = b // a new record: the record encoder caches by identity
}

// syncGeneration learns, after the run's first save c, the generation the
// store gave it: a store numbers a save above every generation it has
// seen, which can be above the one the engine asked for (a session
// removed and started again, whose numbers the store does not reuse), and
// the best's generation must name the generation written. It asks a
// GenerationLoader for the session's newest generation, the one saved if
// its envelope is c's; later saves follow it.
func (r *run[S]) syncGeneration(ctx context.Context, c *checkpoint.Checkpoint) {
	r.genSynced = true
	gl, ok := r.cfg.checkpointer.(GenerationLoader)
	if !ok {
		return
	}
	gens, err := storeGenerations(ctx, gl, c.Session)
	if err != nil || len(gens) == 0 {
		return
	}
	n := gens[len(gens)-1]
	if n.Generation > c.Generation && n.Iteration == c.Iteration && n.Time.Equal(c.Time) && n.Fingerprint == c.Fingerprint {
		r.generation = n.Generation
	}
}

// bestResult decodes the best state for a result.
func (r *run[S]) bestResult() *Best[S] {
	b := r.data.Best
	if b == nil {
		return nil
	}
	var s S
	if err := unmarshal(r.cfg.codec, b.State, &s); err != nil {
		r.warn(r.hist.Iteration, fmt.Sprintf("keep best: decoding the best state: %v", err))
		return nil
	}
	return &Best[S]{State: s, Iteration: b.Iteration, Score: b.Score}
}

// bestGeneration returns the generation the envelope names as best.
func (r *run[S]) bestGeneration() uint64 {
	if r.data.Best == nil {
		return 0
	}
	return r.data.Best.Generation
}

// keepBestSetting is the setting of WithKeepBest, appended to the loop's
// settings only when the option is on, so that the fingerprints of loops
// without it are those of earlier releases.
func keepBestSetting(c *config) (setting, bool) {
	if c.keepBest == nil {
		return setting{}, false
	}
	return setting{"keep best", strings.TrimSpace(c.keepBest.settings())}, true
}
