package iterate

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// Defaults of a loop configured with nothing.
const (
	// DefaultMaxIterations is the iteration limit (seed 000's default).
	DefaultMaxIterations = 4
	// DefaultSession names the session of a loop configured without one.
	DefaultSession = "default"
)

// defaultMaxTasks is the number of tasks per iteration of [Adaptive];
// defaultGrace is how long the engine waits for a task that ignores its
// cancelled context before abandoning it.
const (
	defaultMaxTasks = 3
	defaultGrace    = 5 * time.Second
)

// Option configures an [Engine]. Options are plain values, independent of
// the state type.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Codec turns a state into bytes for a checkpoint and back. The default
// encodes JSON.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// StreamCodec is a [Codec] that can also write a state's encoding to a
// writer. When the checkpointer is a [StreamSaver] too, the engine saves the
// state with Encode, straight into the store (a [checkpoint.Dir]'s file),
// instead of holding the slice Marshal returns: for a large state, that is
// the memory of a whole copy of its encoding saved, or more. [JSON] is one.
//
// Encode writes the encoding of v to w and returns the first error, of the
// encoding or of w. What it writes must decode with Unmarshal as Marshal's
// output does. It may be called again for the same value, when a save is
// retried, and must not keep w.
type StreamCodec interface {
	Codec
	Encode(w io.Writer, v any) error
}

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Encode writes what Marshal returns followed by a newline, as a
// json.Encoder does (escaping HTML as Marshal does); json.Unmarshal ignores
// the newline, so checkpoints saved either way read alike.
//
// A json.Encoder holds the whole encoding in memory before writing it (and
// a []byte's base64 twice), so a state of type []byte, which JSON encodes as
// a base64 string and nothing else, is encoded here piece by piece instead.
func (jsonCodec) Encode(w io.Writer, v any) error {
	if b, ok := v.([]byte); ok && b != nil {
		return encodeBase64(w, b)
	}
	e := jsonEncoders.Get().(*jsonEncoder)
	e.w = w
	err := e.enc.Encode(v)
	e.w = nil
	if err == nil { // an Encoder whose writer failed keeps failing
		jsonEncoders.Put(e)
	}
	return err
}

// jsonEncoder is a json.Encoder whose writer can change, so that encoders
// are pooled and a save allocates none.
type jsonEncoder struct {
	enc *json.Encoder
	w   io.Writer
}

func (e *jsonEncoder) Write(p []byte) (int, error) { return e.w.Write(p) }

var jsonEncoders = sync.Pool{New: func() any {
	e := new(jsonEncoder)
	e.enc = json.NewEncoder(e)
	return e
}}

// encodeBase64 writes b as encoding/json encodes a non-nil []byte, a
// string of its standard base64, and a newline, in pieces of 64 KiB.
func encodeBase64(w io.Writer, b []byte) error {
	const piece = 3 << 14 // bytes of b a piece encodes; a multiple of 3, so only the last is padded
	buf := make([]byte, 0, 1+base64.StdEncoding.EncodedLen(piece))
	buf = append(buf, '"')
	for len(b) > 0 {
		n := min(len(b), piece)
		buf = base64.StdEncoding.AppendEncode(buf, b[:n])
		b = b[n:]
		if _, err := w.Write(buf); err != nil {
			return err
		}
		buf = buf[:0]
	}
	_, err := w.Write(append(buf, '"', '\n'))
	return err
}

// JSON is the default [Codec]: encoding/json. It is a [StreamCodec].
var JSON Codec = jsonCodec{}

type config struct {
	maxIterations    int
	failureThreshold int
	thresholds       gap.Thresholds
	analyzer         GapAnalyzer
	strategy         Strategy
	policy           ConvergencePolicy
	checkpointer     Checkpointer
	session          string
	limits           budget.Limits
	estimate         budget.Usage
	estimated        bool // estimate set by the host
	parallelism      int
	taskTimeout      time.Duration
	grace            time.Duration
	logger           *zap.Logger
	observers        []func(Event)
	codec            Codec
	codecSet         bool // by WithCodec
	persist          Persist
	fingerprintExtra string
	// stateVersion and migrations are WithStateVersion's.
	stateVersion int
	migrations   map[int]Migration
	window       int
	keepBest     *keepBest // WithKeepBest; nil when off
	deadline     Deadline  // WithQuestionDeadline's
	crashBound   int       // WithCrashLoopBound's; 0 when off
	park         bool      // WithParkAtLimit's

	errs []error
}

func defaultConfig() config {
	return config{
		maxIterations:    DefaultMaxIterations,
		failureThreshold: converge.DefaultFailureThreshold,
		session:          DefaultSession,
		grace:            defaultGrace,
		codec:            JSON,
	}
}

func (c *config) invalid(option, reason string) {
	c.errs = append(c.errs, &ConfigError{Option: option, Reason: reason})
}

// ErrInvalidOption is matched by every *ConfigError.
var ErrInvalidOption = errors.New("iterate: invalid option")

// ConfigError reports an invalid option; Run and Resume return it before
// doing anything.
type ConfigError struct {
	Option string
	Reason string
	Err    error
}

func (e *ConfigError) Error() string {
	msg := "iterate: invalid option " + e.Option + ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is ErrInvalidOption.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidOption }

// Unwrap returns the underlying error, if any.
func (e *ConfigError) Unwrap() error { return e.Err }

// WithMaxIterations sets the iteration limit: the loop stops with partial
// convergence (status MaxIterations) after n iterations. 0 means unlimited.
// The default is [DefaultMaxIterations]. The limit holds whatever the
// convergence policy: the engine hands it to the policy as
// History.MaxIterations, which [converge.IterationLimit] reads, and stops
// the loop itself when a policy of [WithConvergence] without that rule
// decides to continue at it (a success or an escalation the policy decides
// on the last allowed iteration stands).
func WithMaxIterations(n int) Option {
	return optionFunc(func(c *config) {
		if n < 0 {
			c.invalid("WithMaxIterations", "negative limit "+strconv.Itoa(n))
			return
		}
		c.maxIterations = n
	})
}

// WithFailureThreshold sets how many consecutive failed iterations abort the
// loop (default [converge.DefaultFailureThreshold]): status Aborted, a
// *StopError matching [ErrAborted]. It holds whatever the convergence
// policy: the engine hands it to the policy as History.FailureThreshold,
// which [converge.Failures] reads, and aborts the loop itself when a policy
// of [WithConvergence] without that rule decides to continue past it.
func WithFailureThreshold(n int) Option {
	return optionFunc(func(c *config) {
		if n < 1 {
			c.invalid("WithFailureThreshold", "threshold must be at least 1, got "+strconv.Itoa(n))
			return
		}
		c.failureThreshold = n
	})
}

// WithThresholds sets the levels the loop is judged by (default: the zero
// [gap.Thresholds], every level at its default). The engine hands the same
// values to the gap analyzer and, as History.Thresholds, to the convergence
// policy, so whatever keeps the loop from converging is a gap its strategy
// targets.
func WithThresholds(t gap.Thresholds) Option {
	return optionFunc(func(c *config) {
		if err := t.Validate(); err != nil {
			c.errs = append(c.errs, &ConfigError{Option: "WithThresholds", Reason: "invalid thresholds", Err: err})
			return
		}
		c.thresholds = t
	})
}

// WithAnalyzer sets the gap analyzer (default [gap.Default]).
func WithAnalyzer(a GapAnalyzer) Option {
	return optionFunc(func(c *config) {
		if a == nil {
			c.invalid("WithAnalyzer", "nil analyzer")
			return
		}
		c.analyzer = a
	})
}

// WithStrategy sets the strategy (default [Adaptive] with its defaults).
func WithStrategy(s Strategy) Option {
	return optionFunc(func(c *config) {
		if s == nil {
			c.invalid("WithStrategy", "nil strategy")
			return
		}
		c.strategy = s
	})
}

// WithConvergence sets the convergence policy (default [converge.Default]).
// The policy reads the loop's thresholds and failure threshold from the
// History it is given. A policy with a Validate() error method is validated
// when the loop starts (with [converge.ValidateWindow], against the loop's
// history window).
//
// The policy is not the only thing that stops a loop. Whatever the policy,
// the failure threshold aborts it ([WithFailureThreshold]), a hard budget
// limit ends it ([WithBudget]), and the strategy may stop it: the default
// [Adaptive] stops a loop whose same problems survived its attempts (status
// Stuck) even under a policy with no stuck rule; give it EscalateAfter, or
// another [Strategy], to do otherwise.
func WithConvergence(p ConvergencePolicy) Option {
	return optionFunc(func(c *config) {
		if p == nil {
			c.invalid("WithConvergence", "nil policy")
			return
		}
		c.policy = p
	})
}

// WithCheckpointer sets where checkpoints go (default: none), and how. A
// checkpoint is saved after every iteration and at every stop, best effort
// unless p says [Strict]; see [Persist] for the other settings, which only
// exist together with a store:
//
//	iterate.WithCheckpointer(checkpoint.NewDir(".refine"), iterate.Strict|iterate.Journal)
func WithCheckpointer(cp Checkpointer, p ...Persist) Option {
	return optionFunc(func(c *config) {
		if cp == nil {
			c.invalid("WithCheckpointer", "nil checkpointer")
			return
		}
		c.checkpointer = cp
		for _, f := range p {
			if f&^(Strict|Journal|Cleanup|RefuseResumable) != 0 {
				c.invalid("WithCheckpointer", "unknown Persist flags "+strconv.Itoa(int(f)))
			}
			c.persist |= f
		}
	})
}

// Persist selects how a loop keeps its checkpoints; flags combine with |
// and go to [WithCheckpointer] with the store they apply to.
type Persist uint8

const (
	// Strict makes a checkpoint that cannot be saved end the run, after a
	// few retries with backoff, with a *StopError (status Failed) and
	// without saving a final status: the session's latest checkpoint stays
	// the last good one, so Resume continues once the fault is gone. By
	// default saving is best effort: a failure is logged as a warning and
	// reported as an event, and the loop goes on. A save refused because
	// the session's lock was lost (checkpoint.ErrFenced) always ends the run.
	Strict Persist = 1 << iota
	// Journal journals every task that finishes, failed ones included: a
	// checkpoint holding its outcome is saved at once, so that a crash or an
	// interruption in the middle of an iteration loses only the tasks still
	// running, and nothing finished is run or paid for twice. A task that
	// fails with the error (or cause) of the run's context once it has
	// ended was interrupted: it is not journaled, and runs again; so a Work
	// interrupted by its context returns the context's error. A replayed
	// failure carries an error of the same message (and [Permanent] mark). Resume
	// plans the interrupted iteration again and takes the journaled tasks'
	// outcomes instead of running them (a task is matched by iteration,
	// index, role and main gap, so a strategy that plans differently reruns
	// it). A task's TaskEnded is sent once a save holding it has returned.
	//
	// Each journaled task costs at most one save. With a store that takes
	// the state as bytes (no [StreamSaver], as pgcheckpoint's), the saves
	// of tasks run in parallel are a group commit, made by a goroutine of
	// the journal's own, so that a task's end waits for no save: once a
	// task has ended, the journal waits 1 ms before it saves, then saves
	// every task that ended by then in one save; a task that ends while a
	// save is in flight is saved by the next one, with every other that
	// ended meanwhile; and when the loop has integrated the iteration in
	// the meantime, the iteration's own save, which the loop starts at
	// once, takes the place of the journal's (the host's Integrate may
	// thus run while the journal saves). A finished task is durable at
	// most 1 ms later than a save of its own, made in turn, would make it:
	// nothing, against tasks that run for seconds, and less than a round
	// trip to a database; an iteration of quick tasks then costs one save,
	// not one more than its tasks.
	Journal
	// Cleanup makes a loop that stops cleanly (converged, early exit or at
	// the iteration limit) remove its session's checkpoints, if the store
	// is a [Remover]. By default they are kept.
	Cleanup
	// RefuseResumable makes Run refuse to start over a session whose latest
	// checkpoint can still be resumed (running, interrupted or escalated):
	// it returns a *ResumableError carrying that checkpoint, so that the
	// host can offer Resume instead. The check happens under the session
	// lock, if any. By default Run starts a new session regardless.
	RefuseResumable
)

// WithSession names the session whose checkpoints Run writes and Resume
// reads (default [DefaultSession]).
func WithSession(name string) Option {
	return optionFunc(func(c *config) {
		if err := checkpoint.ValidateSession(name); err != nil {
			c.errs = append(c.errs, &ConfigError{Option: "WithSession", Reason: "invalid session name", Err: err})
			return
		}
		c.session = name
	})
}

// WithBudget sets the budget's limits (default: none). The loop stops with
// BudgetExhausted when a hard limit is reached or the next iteration's
// estimate would exceed one; a hard wall-time limit also bounds the tasks in
// flight, which are cancelled when it runs out.
func WithBudget(l budget.Limits) Option {
	return optionFunc(func(c *config) {
		if err := l.Validate(); err != nil {
			c.errs = append(c.errs, &ConfigError{Option: "WithBudget", Reason: "invalid limits", Err: err})
			return
		}
		c.limits = l
	})
}

// WithEstimate sets the usage reserved from the budget before each iteration.
// An iteration whose estimate would exceed a hard limit does not start. An
// iteration is always one iteration: a zero u.Iterations counts as 1.
//
// By default the engine estimates each iteration from the ones before: the
// mean tokens, cost, calls and wall time a completed iteration spent
// (nothing before the first; an attempt interrupted after spending counts
// in the usage, not in the mean), so that a token limit of 1,000 at 400
// tokens an iteration stops after two iterations rather than after
// spending 1,200, and a wall-time limit of 1s at 0.4s an iteration after
// two rather than cutting a third short. A hard wall-time limit also bounds
// the iteration in flight, when the estimate was short.
func WithEstimate(u budget.Usage) Option {
	return optionFunc(func(c *config) {
		if err := u.Validate(); err != nil {
			c.errs = append(c.errs, &ConfigError{Option: "WithEstimate", Reason: "invalid estimate", Err: err})
			return
		}
		c.estimate = u
		c.estimate.Iterations = max(u.Iterations, 1)
		c.estimated = true
	})
}

// WithParallelism bounds how many tasks of one iteration run at once
// (default: all of them).
func WithParallelism(n int) Option {
	return optionFunc(func(c *config) {
		if n < 1 {
			c.invalid("WithParallelism", "must be at least 1, got "+strconv.Itoa(n))
			return
		}
		c.parallelism = n
	})
}

// WithTaskTimeout bounds each task (default: none). A task that times out
// fails; the iteration goes on.
func WithTaskTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d < 0 {
			c.invalid("WithTaskTimeout", "negative timeout")
			return
		}
		c.taskTimeout = d
	})
}

// WithGrace sets how long a task that ignores its cancelled context is
// waited for before it is abandoned with an error (default 5s).
func WithGrace(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d <= 0 {
			c.invalid("WithGrace", "grace must be positive")
			return
		}
		c.grace = d
	})
}

// WithLogger sets the structured logger (default zap.NewNop()).
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l == nil {
			c.invalid("WithLogger", "nil logger")
			return
		}
		c.logger = l
	})
}

// WithObserver adds an observer that receives every [Event], in the loop's
// goroutine except TaskStarted and TaskEnded, which arrive from the task's
// goroutine (TaskEnded, under [Journal], possibly from the goroutine of
// the save that holds it: see TaskEnded), Warned events of host code
// ([Warn], Round.Warn), which arrive from the goroutine that raised them,
// and the task journal's Warned and CheckpointSaved events, which arrive
// from the task's goroutine or the journal's own. Observers
// must be quick and safe for concurrent use. An observer that panics ends
// the run at its next step with a *PanicError (Where "observer"), whichever
// goroutine the event came from.
func WithObserver(fn func(Event)) Option {
	return optionFunc(func(c *config) {
		if fn == nil {
			c.invalid("WithObserver", "nil observer")
			return
		}
		c.observers = append(c.observers, fn)
	})
}

// WithCodec sets how the state is encoded in checkpoints (default [JSON]).
// Like the other settings of checkpoints, it needs [WithCheckpointer]:
// without one, any codec, JSON included, is a *ConfigError.
func WithCodec(codec Codec) Option {
	return optionFunc(func(c *config) {
		if codec == nil {
			c.invalid("WithCodec", "nil codec")
			return
		}
		c.codec, c.codecSet = codec, true
	})
}

// WithFingerprint adds host settings (a prompt version, a model name) to the
// fingerprint that guards Resume.
func WithFingerprint(extra string) Option {
	return optionFunc(func(c *config) { c.fingerprintExtra = extra })
}

// WithHistoryWindow sets how many recent records the convergence history
// keeps (default [converge.DefaultWindow]). The patience of a
// [converge.EarlyStopping] in the policy must be less than n: Run and
// Resume return a *ConfigError otherwise (see [converge.ValidateWindow]).
func WithHistoryWindow(n int) Option {
	return optionFunc(func(c *config) {
		if n < 2 {
			c.invalid("WithHistoryWindow", "window must be at least 2, got "+strconv.Itoa(n))
			return
		}
		c.window = n
	})
}

// ResumeOption configures one call of Resume.
type ResumeOption interface{ applyResume(*resumeConfig) }

type resumeConfig struct {
	answer      string
	hasAnswer   bool
	allowChange bool
	fork        *forkConfig // ForkFrom
	state       any         // WithState, when hasState
	hasState    bool
	extend      budget.Limits // ExtendBudget's, when hasExtend
	extendBy    string
	hasExtend   bool
	deadlineTo  time.Time // ExtendDeadline's, when hasDeadline
	deadlineBy  string
	hasDeadline bool
}

type resumeFunc func(*resumeConfig)

func (f resumeFunc) applyResume(c *resumeConfig) { f(c) }

// WithAnswer gives a human's answer to the question of an escalated session.
// The loop resumes with the answer passed to the next iteration's tasks and a
// fresh allowance of iterations.
func WithAnswer(answer string) ResumeOption {
	return resumeFunc(func(c *resumeConfig) { c.answer, c.hasAnswer = answer, true })
}

// AllowSettingsChange lets Resume continue a session whose checkpoint was
// written under other settings (a different fingerprint). By default such a
// resume is refused with a *SettingsChangedError naming what changed.
func AllowSettingsChange() ResumeOption {
	return resumeFunc(func(c *resumeConfig) { c.allowChange = true })
}

// nopLogger is the default logger, shared: a Logger is immutable.
var nopLogger = zap.NewNop()

// defaultStrategy is the strategy of loops configured with none: an
// Adaptive with its defaults, which keeps nothing between plans, shared.
var defaultStrategy Strategy = &Adaptive{}

// finish fills defaults and validates what needs the whole configuration.
func (c *config) finish() error {
	if c.logger == nil {
		c.logger = nopLogger
	}
	if c.analyzer == nil {
		c.analyzer = gap.Default()
	}
	if c.strategy == nil {
		c.strategy = defaultStrategy
	}
	if c.policy == nil {
		c.policy = converge.Default()
	}
	if c.checkpointer == nil && c.codecSet {
		c.invalid("WithCodec", "has no effect without WithCheckpointer")
	}
	checkPark(c) // park.go
	if err := converge.ValidateWindow(c.policy, c.window); err != nil {
		c.errs = append(c.errs, &ConfigError{Option: "WithConvergence", Reason: "invalid policy", Err: err})
	}
	for _, v := range []any{c.strategy, c.analyzer} {
		if val, ok := v.(interface{ Validate() error }); ok {
			if err := val.Validate(); err != nil {
				c.errs = append(c.errs, &ConfigError{Option: fmt.Sprintf("%T", v), Reason: "invalid", Err: err})
			}
		}
	}
	return errors.Join(c.errs...)
}
