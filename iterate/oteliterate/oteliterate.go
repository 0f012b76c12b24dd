package oteliterate

import (
	"context"
	"crypto/sha256"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/refine-go/refine/iterate/oteliterate"

// Option configures [New].
type Option interface{ apply(*config) }

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider sets the provider of the tracer; nil, or no option,
// means the global one (otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithMeterProvider sets the provider of the meter; nil, or no option, means
// the global one (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.mp = mp })
}

// Observer turns the events of loops into spans and metrics; pass its
// Observe method to iterate.WithObserver of every loop (events name their
// session, so one Observer follows any number of loops at once). Create it
// with [New]; the zero value is not usable. An Observer is safe for
// concurrent use.
type Observer struct {
	tracer trace.Tracer

	iterations, tasks, failures, tokens metric.Int64Counter
	cost                                metric.Float64Counter
	iterationDuration, taskDuration     metric.Float64Histogram

	mu   sync.Mutex
	runs map[string]*run // the runs in progress, by session
	// last holds the span of the last run of each session that stopped
	// resumable, to link a resume to it; at most maxLast sessions.
	last  map[trace.TraceID]trace.SpanContext // session trace → run
	order []trace.TraceID                     // the keys of last, oldest first
	pre   map[string][]spanEvent              // events for the next run of a session
}

// maxLast bounds the runs an Observer remembers for linking resumes.
const maxLast = 64

// New returns an Observer that records with the given providers (the
// globals by default). Errors creating instruments go to otel.Handle; the
// Observer then records without the failed instrument.
func New(opts ...Option) *Observer {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	o := &Observer{tracer: c.tp.Tracer(ScopeName), runs: make(map[string]*run),
		last: make(map[trace.TraceID]trace.SpanContext), pre: make(map[string][]spanEvent)}
	m := c.mp.Meter(ScopeName)
	seconds := metric.WithExplicitBucketBoundaries(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
	o.iterations = must(m.Int64Counter("refine.iterations", metric.WithUnit("{iteration}"),
		metric.WithDescription("Iterations completed.")))
	o.tasks = must(m.Int64Counter("refine.tasks", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks ended, failed or not.")))
	o.failures = must(m.Int64Counter("refine.failures", metric.WithUnit("{failure}"),
		metric.WithDescription("Failed iterations and failed tasks (attribute refine.scope).")))
	o.tokens = must(m.Int64Counter("refine.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens the tasks reported spending.")))
	o.cost = must(m.Float64Counter("refine.cost",
		metric.WithDescription("Cost the tasks reported spending, in the worker's unit.")))
	o.iterationDuration = must(m.Float64Histogram("refine.iteration.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the completed iterations."), seconds))
	o.taskDuration = must(m.Float64Histogram("refine.task.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the tasks."), seconds))
	return o
}

func must[T any](v T, err error) T {
	if err != nil {
		otel.Handle(err)
	}
	return v
}

// Attribute keys.
const (
	keySession     = attribute.Key("refine.session")
	keyResumed     = attribute.Key("refine.resumed")
	keyMax         = attribute.Key("refine.max_iterations")
	keyCompleted   = attribute.Key("refine.completed_iterations")
	keyStatus      = attribute.Key("refine.status")
	keyReason      = attribute.Key("refine.reason")
	keyIteration   = attribute.Key("refine.iteration")
	keyIterations  = attribute.Key("refine.iterations")
	keyAction      = attribute.Key("refine.action")
	keyDecision    = attribute.Key("refine.decision")
	keyGaps        = attribute.Key("refine.gaps")
	keyCoverage    = attribute.Key("refine.coverage")
	keyConfidence  = attribute.Key("refine.confidence")
	keyTasks       = attribute.Key("refine.tasks")
	keyFailedTasks = attribute.Key("refine.tasks.failed")
	keyFailed      = attribute.Key("refine.failed")
	keyTaskID      = attribute.Key("refine.task.id")
	keyRole        = attribute.Key("refine.task.role")
	keyReplayed    = attribute.Key("refine.task.replayed")
	keyGapKind     = attribute.Key("refine.gap.kind")
	keyGapPriority = attribute.Key("refine.gap.priority")
	keyTokens      = attribute.Key("refine.usage.tokens")
	keyCost        = attribute.Key("refine.usage.cost")
	keyCalls       = attribute.Key("refine.usage.calls")
	keyLink        = attribute.Key("refine.link")
	keyScope       = attribute.Key("refine.scope")
	keyGeneration  = attribute.Key("refine.checkpoint.generation")
	keyError       = attribute.Key("refine.error")
	keySkipped     = attribute.Key("refine.checkpoint.skipped")
	keyMessage     = attribute.Key("refine.message")
	keyConsecutive = attribute.Key("refine.consecutive_failures")
	keyElapsed     = attribute.Key("refine.elapsed")
	keySaved       = attribute.Key("refine.checkpoint.saved")
	keyStartedAt   = attribute.Key("refine.started_at")
	keyBytes       = attribute.Key("refine.checkpoint.bytes")
	keyInterrupted = attribute.Key("refine.interrupted")

	// The OpenTelemetry GenAI conventions' names.
	keyInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	// The parts of the input tokens read from and written to a prompt
	// cache, under the GenAI conventions' names.
	keyCacheReadTokens  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	keyCacheWriteTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	keyOperation        = attribute.Key("gen_ai.operation.name")
	keyAgentName        = attribute.Key("gen_ai.agent.name")
	keyTokenType        = attribute.Key("gen_ai.token.type")
)

// run is the state of the run in progress.
type run struct {
	session attribute.KeyValue
	anchor  trace.SpanContext
	span    trace.Span
	ctx     context.Context // carries span

	// What the rounds before the next iteration found: its assessment,
	// decision and plan arrive before IterationStarted.
	pending []attribute.KeyValue

	iter    trace.Span // the iteration in progress, or nil
	iterCtx context.Context
	tasks   map[string]trace.Span // the tasks in progress, by Task.ID

	// The phases of the round in progress, timed as their events arrive
	// (the loop sends them from its goroutine as each phase ends): the
	// assessment and gap analysis from roundStart to assessed, the decision
	// and plan from assessed to planned; the integration from the last
	// task's end to IterationEnded.
	roundStart, assessed, planned, lastTaskEnd time.Time

	iterations int
	usage      budget.Usage // of this run's completed iterations
}

// Observe records e. It is the function to pass to iterate.WithObserver.
// An event belongs to the run of its session ([iterate.SessionOf]); one
// that names none, as a test makes them, to the only run in progress.
// Recovered events, and Warned events of iteration 0, that arrive before
// LoopStarted (Resume reports a fallback to an older checkpoint before it
// starts) are added to the next run's span, at most 16 of them; other
// events outside a run (before LoopStarted, after LoopStopped) are ignored.
func (o *Observer) Observe(e iterate.Event) {
	now := time.Now()
	session := iterate.SessionOf(e)
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := e.(iterate.LoopStarted); ok {
		o.start(s, now)
		return
	}
	r := o.runOf(session)
	if r == nil {
		o.early(e, session, now)
		return
	}
	switch e := e.(type) {
	case iterate.GapsFound:
		r.assessed = now
		cov, conf := e.Assessment.CoverageRatio(), e.Assessment.AverageConfidence()
		r.pending = append(r.pending[:0], keyGaps.Int(len(e.Gaps)), keyCoverage.Float64(cov), keyConfidence.Float64(conf))
		r.span.SetAttributes(keyCoverage.Float64(cov), keyConfidence.Float64(conf))
	case iterate.Decided:
		r.pending = append(r.pending, keyDecision.String(e.Decision.Verdict.String()))
	case iterate.Planned:
		r.planned = now
		r.pending = append(r.pending, keyAction.String(string(e.Plan.Action)))
	case iterate.IterationStarted:
		o.endIteration(r, "iteration did not end", trace.WithTimestamp(e.Time))
		attrs := append([]attribute.KeyValue{r.session, keyIteration.Int(e.Iteration())}, r.pending...)
		r.pending = r.pending[:0]
		r.iterCtx, r.iter = o.tracer.Start(r.ctx, "refine.iteration", trace.WithTimestamp(e.Time),
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		o.phases(r, r.iterCtx, e.Iteration())
		r.lastTaskEnd = time.Time{}
	case iterate.TaskStarted:
		o.startTask(r, &e.Task)
	case iterate.TaskEnded:
		r.lastTaskEnd = now
		o.endTask(r, e)
	case iterate.IterationEnded:
		o.iterationEnded(r, e)
		r.roundStart = now
	case iterate.CheckpointSaved:
		o.saved(r, e, now)
		if e.Status != iterate.Running || r.iter == nil { // not a task's journal save
			r.roundStart = now
		}
	case iterate.Recovered:
		recovered(e).addTo(r.span)
	case iterate.Warned:
		span := r.span
		if r.iter != nil {
			span = r.iter
		}
		warning(e).addTo(span)
	case iterate.LoopStopped:
		o.stop(r, e)
	}
}

// runOf returns the run in progress of session; for an event that names no
// session, the only run in progress, if there is one.
func (o *Observer) runOf(session string) *run {
	if r, ok := o.runs[session]; ok || session != "" {
		return r
	}
	if len(o.runs) == 1 {
		for _, r := range o.runs {
			return r
		}
	}
	return nil
}

// phases records the spans of the round's assessment ("refine.assess":
// assessment and gap analysis) and plan ("refine.plan": convergence
// decision and plan), as children of parent, from the times their events
// arrived; a phase whose end did not arrive is left out.
func (o *Observer) phases(r *run, parent context.Context, iteration int) {
	attrs := trace.WithAttributes(r.session, keyIteration.Int(iteration))
	if !r.assessed.IsZero() && !r.roundStart.IsZero() {
		_, span := o.tracer.Start(parent, "refine.assess", trace.WithTimestamp(r.roundStart),
			trace.WithSpanKind(trace.SpanKindInternal), attrs)
		span.End(trace.WithTimestamp(r.assessed))
		if !r.planned.IsZero() && !r.planned.Before(r.assessed) {
			_, span := o.tracer.Start(parent, "refine.plan", trace.WithTimestamp(r.assessed),
				trace.WithSpanKind(trace.SpanKindInternal), attrs)
			span.End(trace.WithTimestamp(r.planned))
		}
	}
	r.roundStart, r.assessed, r.planned = time.Time{}, time.Time{}, time.Time{}
}

// saved records a checkpoint save as a span "refine.checkpoint.save", a
// child of the run, from its start to its end.
func (o *Observer) saved(r *run, e iterate.CheckpointSaved, now time.Time) {
	attrs := []attribute.KeyValue{r.session, keyIteration.Int(e.Iteration()), keyGeneration.Int64(int64(e.Generation)),
		keyStatus.String(string(e.Status)), keyBytes.Int64(e.Bytes)}
	_, span := o.tracer.Start(r.ctx, "refine.checkpoint.save", trace.WithTimestamp(now.Add(-e.Duration)),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(now))
}

// anchor returns the span context every run of a session is a child of,
// derived from the session's name and start.
func anchor(session string, startedAt int64) trace.SpanContext {
	h := sha256.Sum256([]byte("refine.run\x00" + session + "\x00" + strconv.FormatInt(startedAt, 10)))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], h[:16])
	copy(sid[:], h[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.FlagsSampled, Remote: true})
}

func (o *Observer) start(e iterate.LoopStarted, now time.Time) {
	if prev := o.runs[e.Session]; prev != nil {
		// A run of the session that never stopped (LoopStopped is always
		// sent, so only when two loops run one session at once): end it.
		o.abandon(prev, "another run of the session started before this one stopped")
	}
	r := &run{session: keySession.String(e.Session), anchor: anchor(e.Session, e.StartedAt.UnixNano()),
		tasks: make(map[string]trace.Span), roundStart: now}
	attrs := []attribute.KeyValue{r.session, keyResumed.Bool(e.Resumed), keyMax.Int(e.MaxIterations),
		keyStartedAt.String(e.StartedAt.UTC().Format(time.RFC3339Nano))}
	opts := []trace.SpanStartOption{trace.WithTimestamp(e.Time), trace.WithSpanKind(trace.SpanKindInternal)}
	// The run's parent: the span of the context Run or Resume was called
	// with, if any (a request's); else the session's span context. The
	// other is linked.
	parent := trace.ContextWithRemoteSpanContext(context.Background(), r.anchor)
	var links []trace.Link
	if e.Context != nil {
		if sc := trace.SpanContextFromContext(e.Context); sc.IsValid() {
			parent = trace.ContextWithSpanContext(context.Background(), sc)
			links = append(links, trace.Link{SpanContext: r.anchor, Attributes: []attribute.KeyValue{keyLink.String("session")}})
		}
	}
	if e.Resumed {
		attrs = append(attrs, keyCompleted.Int(e.Completed))
		switch prev, ok := o.last[r.anchor.TraceID()]; {
		case ok:
			links = append(links, trace.Link{SpanContext: prev, Attributes: []attribute.KeyValue{keyLink.String("previous_run")}})
		case len(links) == 0:
			links = append(links, trace.Link{SpanContext: r.anchor, Attributes: []attribute.KeyValue{keyLink.String("session")}})
		}
	}
	if len(links) > 0 {
		opts = append(opts, trace.WithLinks(links...))
	}
	opts = append(opts, trace.WithAttributes(attrs...))
	r.ctx, r.span = o.tracer.Start(parent, "refine.run", opts...)
	// Its own early events, and those that named no session (as a test
	// makes them).
	for _, key := range []string{e.Session, ""} {
		for _, ev := range o.pre[key] {
			ev.addTo(r.span)
		}
		delete(o.pre, key)
	}
	o.runs[e.Session] = r
}

// spanEvent is a span event waiting for its run.
type spanEvent struct {
	name string
	opts []trace.EventOption
}

func (ev spanEvent) addTo(span trace.Span) { span.AddEvent(ev.name, ev.opts...) }

// maxPre bounds the events kept for the next run.
const maxPre = 16

// early keeps the Recovered and Warned events that arrive before a run
// starts (Resume reports a fallback to an older checkpoint before
// LoopStarted) for the next run's span, with the time they arrived.
func (o *Observer) early(e iterate.Event, session string, now time.Time) {
	var ev spanEvent
	switch e := e.(type) {
	case iterate.Recovered:
		ev = recovered(e)
	case iterate.Warned:
		if e.Iteration() != 0 { // a late warning of a run that stopped
			return
		}
		ev = warning(e)
	default:
		return
	}
	if len(o.pre[session]) < maxPre && (len(o.pre) < maxLast || o.pre[session] != nil) {
		ev.opts = append(ev.opts, trace.WithTimestamp(now))
		o.pre[session] = append(o.pre[session], ev)
	}
}

func recovered(e iterate.Recovered) spanEvent {
	return spanEvent{"refine.recovered", []trace.EventOption{trace.WithAttributes(
		keyGeneration.Int64(int64(e.Generation)), keySkipped.Int(len(e.Skipped)))}}
}

func warning(e iterate.Warned) spanEvent {
	return spanEvent{"refine.warning", []trace.EventOption{trace.WithAttributes(keyMessage.String(e.Message))}}
}

func (o *Observer) startTask(r *run, t *iterate.Task) {
	parent := r.ctx
	if r.iter != nil {
		parent = r.iterCtx
	}
	attrs := []attribute.KeyValue{r.session, keyTaskID.String(t.ID()), keyIteration.Int(t.Iteration),
		keyRole.String(string(t.Role)), keyAction.String(string(t.Action)),
		keyOperation.String("invoke_agent"), keyAgentName.String(string(t.Role))}
	if len(t.Gaps) > 0 {
		g := t.Gap()
		attrs = append(attrs, keyGapKind.String(string(g.Kind)), keyGapPriority.String(g.Priority.String()))
	}
	_, span := o.tracer.Start(parent, taskSpanName(t.Role), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	r.tasks[t.ID()] = span
}

// taskSpanName is the name of a task's span, as the GenAI conventions name
// an agent's invocation: "invoke_agent {gen_ai.agent.name}".
func taskSpanName(role iterate.RoleName) string {
	if role == "" {
		return "invoke_agent"
	}
	return "invoke_agent " + string(role)
}

func usageAttrs(u budget.Usage) []attribute.KeyValue {
	attrs := []attribute.KeyValue{keyTokens.Int64(u.Tokens), keyCost.Float64(u.Cost), keyCalls.Int64(u.Calls)}
	if u.InputTokens != 0 || u.OutputTokens != 0 {
		attrs = append(attrs, keyInputTokens.Int64(u.InputTokens), keyOutputTokens.Int64(u.OutputTokens))
	}
	if u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 {
		attrs = append(attrs, keyCacheReadTokens.Int64(u.CacheReadTokens), keyCacheWriteTokens.Int64(u.CacheWriteTokens))
	}
	return attrs
}

func (o *Observer) endTask(r *run, e iterate.TaskEnded) {
	id := e.Task.ID()
	span, ok := r.tasks[id]
	if !ok { // no TaskStarted: an observer added while tasks ran
		o.startTask(r, &e.Task)
		span = r.tasks[id]
	}
	delete(r.tasks, id)
	span.SetAttributes(usageAttrs(e.Usage)...)
	if e.Replayed {
		span.SetAttributes(keyReplayed.Bool(true))
	}
	if e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	}
	ctx := trace.ContextWithSpan(context.Background(), span)
	span.End()

	if e.Replayed {
		return // counted when it ran
	}
	attrs := metric.WithAttributes(r.session, keyRole.String(string(e.Task.Role)))
	o.tasks.Add(ctx, 1, attrs)
	o.taskDuration.Record(ctx, e.Duration.Seconds(), attrs)
	o.countTokens(ctx, e.Usage, r.session, keyRole.String(string(e.Task.Role)))
	if e.Usage.Cost != 0 {
		o.cost.Add(ctx, e.Usage.Cost, attrs)
	}
	if e.Err != nil {
		o.failures.Add(ctx, 1, metric.WithAttributes(r.session, keyScope.String("task"), keyRole.String(string(e.Task.Role))))
	}
}

// countTokens counts tokens: the input and output ones apart (attribute
// gen_ai.token.type), and those of a total not split so without a type.
func (o *Observer) countTokens(ctx context.Context, u budget.Usage, attrs ...attribute.KeyValue) {
	typed := func(kind string, n int64) {
		if n != 0 {
			o.tokens.Add(ctx, n, metric.WithAttributes(append(attrs, keyTokenType.String(kind))...))
		}
	}
	typed("input", u.InputTokens)
	typed("output", u.OutputTokens)
	if rest := u.Tokens - u.InputTokens - u.OutputTokens; rest != 0 {
		o.tokens.Add(ctx, rest, metric.WithAttributes(attrs...))
	}
}

func (o *Observer) iterationEnded(r *run, e iterate.IterationEnded) {
	span := r.iter
	start := e.Time.Add(-e.Duration)
	if span == nil { // no IterationStarted: an observer added mid-iteration
		_, span = o.tracer.Start(r.ctx, "refine.iteration", trace.WithTimestamp(start),
			trace.WithAttributes(r.session, keyIteration.Int(e.Iteration())))
	} else {
		// The integration of the tasks' outcomes: from the last task's end
		// (or the iteration's start, without tasks) to the iteration's.
		from := start
		if r.lastTaskEnd.After(from) && !r.lastTaskEnd.After(e.Time) {
			from = r.lastTaskEnd
		}
		_, integ := o.tracer.Start(r.iterCtx, "refine.integrate", trace.WithTimestamp(from),
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(r.session, keyIteration.Int(e.Iteration())))
		integ.End(trace.WithTimestamp(e.Time))
	}
	r.iter, r.iterCtx = nil, nil
	span.SetAttributes(append(usageAttrs(e.Usage), keyTasks.Int(e.Tasks), keyFailedTasks.Int(e.FailedTasks),
		keyFailed.Bool(e.Failed), keyConsecutive.Int(e.ConsecutiveFailures))...)
	if e.Failed {
		msg := "iteration failed"
		if e.Err != nil {
			span.RecordError(e.Err)
			msg = e.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	ctx := trace.ContextWithSpan(context.Background(), span)
	span.End(trace.WithTimestamp(e.Time))

	r.iterations++
	r.usage = r.usage.Add(e.Usage)
	attrs := metric.WithAttributes(r.session)
	o.iterations.Add(ctx, 1, attrs)
	o.iterationDuration.Record(ctx, e.Duration.Seconds(), attrs)
	if e.Failed {
		o.failures.Add(ctx, 1, metric.WithAttributes(r.session, keyScope.String("iteration")))
	}
}

// endIteration ends the tasks and the iteration still open, with an error
// status saying why.
func (o *Observer) endIteration(r *run, why string, end ...trace.SpanEndOption) {
	for id, span := range r.tasks {
		span.SetStatus(codes.Error, why)
		span.End(end...)
		delete(r.tasks, id)
	}
	if r.iter != nil {
		r.iter.SetStatus(codes.Error, why)
		r.iter.End(end...)
		r.iter, r.iterCtx = nil, nil
	}
}

func (o *Observer) stop(r *run, e iterate.LoopStopped) {
	end := trace.WithTimestamp(e.Time)
	o.endIteration(r, "loop stopped mid-iteration: "+e.Reason, end)
	o.phases(r, r.ctx, e.Iteration()+1) // the round that decided the stop
	r.span.SetAttributes(append(usageAttrs(r.usage), keyStatus.String(string(e.Status)), keyReason.String(e.Reason),
		keyIteration.Int(e.Iteration()), keyIterations.Int(r.iterations), keyConsecutive.Int(e.ConsecutiveFailures),
		keyElapsed.Float64(e.Elapsed.Seconds()), keySaved.Bool(e.Saved))...)
	if e.SaveErr != nil {
		r.span.RecordError(e.SaveErr)
	}
	switch e.Status {
	case iterate.Failed, iterate.Aborted:
		r.span.SetStatus(codes.Error, e.Reason)
	case iterate.Interrupted:
		// The caller ended the run's context: not an error to page anyone
		// about; Resume continues it.
		r.span.SetAttributes(keyInterrupted.Bool(true))
	}
	r.span.End(end)
	o.forget(r)
	o.remember(r.anchor.TraceID(), r.span.SpanContext(), !e.Status.Final())
}

// forget removes r from the runs in progress.
func (o *Observer) forget(r *run) {
	for s, x := range o.runs {
		if x == r {
			delete(o.runs, s)
			return
		}
	}
}

// remember keeps the span of a run that may be resumed (keep), or forgets
// the session's last run.
func (o *Observer) remember(session trace.TraceID, sc trace.SpanContext, keep bool) {
	if _, ok := o.last[session]; ok {
		o.order = slices.DeleteFunc(o.order, func(id trace.TraceID) bool { return id == session })
		delete(o.last, session)
	}
	if !keep {
		return
	}
	o.last[session] = sc
	o.order = append(o.order, session)
	if len(o.order) > maxLast {
		delete(o.last, o.order[0])
		o.order = slices.Delete(o.order, 0, 1)
	}
}

// abandon ends a run that never stopped.
func (o *Observer) abandon(r *run, why string) {
	o.endIteration(r, why)
	r.span.SetStatus(codes.Error, why)
	r.span.End()
	o.forget(r)
}
