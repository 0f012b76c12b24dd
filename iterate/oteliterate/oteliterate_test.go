package oteliterate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
	"github.com/refine-go/refine/iterate/oteliterate"
)

// telemetry is a real SDK pipeline: a span recorder and a manual metric
// reader.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newTelemetry(t *testing.T) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	t.Cleanup(func() {
		_ = tel.tp.Shutdown(context.Background())
		_ = tel.mp.Shutdown(context.Background())
	})
	return tel
}

func (tel *telemetry) observer() *oteliterate.Observer {
	return oteliterate.New(oteliterate.WithTracerProvider(tel.tp), oteliterate.WithMeterProvider(tel.mp))
}

// shown lists, per span name, the attributes the tree shows.
var shown = map[string][]attribute.Key{
	"refine.run": {"refine.session", "refine.resumed", "refine.max_iterations", "refine.completed_iterations",
		"refine.status", "refine.reason", "refine.iteration", "refine.iterations", "refine.usage.tokens",
		"refine.coverage", "refine.confidence"},
	"refine.iteration": {"refine.session", "refine.iteration", "refine.action", "refine.decision", "refine.gaps",
		"refine.coverage", "refine.confidence", "refine.tasks", "refine.tasks.failed", "refine.failed",
		"refine.usage.tokens", "refine.usage.cost", "refine.usage.calls"},
	"invoke_agent": {"refine.task.id", "refine.task.role", "refine.action", "refine.gap.kind", "refine.gap.priority",
		"refine.usage.tokens", "refine.usage.cost", "gen_ai.operation.name", "gen_ai.agent.name",
		"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"},
	"refine.checkpoint.save": {"refine.iteration", "refine.checkpoint.generation", "refine.status"},
	"refine.assess":          {"refine.iteration"},
	"refine.plan":            {"refine.iteration"},
	"refine.integrate":       {"refine.iteration"},
}

// line renders a span: its name, the attributes shown, its status and
// whether it recorded an exception.
func line(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	b.WriteString(s.Name())
	attrs := attribute.NewSet(s.Attributes()...)
	name, _, _ := strings.Cut(s.Name(), " ") // "invoke_agent explore"
	for _, k := range shown[name] {
		if v, ok := attrs.Value(k); ok {
			fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(string(k), "refine."), v.String())
		}
	}
	if s.Status().Code != codes.Unset {
		fmt.Fprintf(&b, " [%s: %s]", s.Status().Code, s.Status().Description)
	}
	for _, ev := range s.Events() {
		if ev.Name == "exception" {
			b.WriteString(" +exception")
		}
	}
	return b.String()
}

// tree renders the ended spans as an indented tree, siblings sorted; a span
// whose parent was not recorded is a root. It fails the test if a span was
// started but never ended.
func tree(t *testing.T, rec *tracetest.SpanRecorder) []string {
	t.Helper()
	ended := rec.Ended()
	if n := len(rec.Started()); n != len(ended) {
		t.Errorf("%d spans started, %d ended", n, len(ended))
	}
	byID := map[trace.SpanID]bool{}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byID[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range ended {
		if p := s.Parent().SpanID(); byID[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var out []string
	var walk func(spans []sdktrace.ReadOnlySpan, depth int)
	walk = func(spans []sdktrace.ReadOnlySpan, depth int) {
		sort.SliceStable(spans, func(i, j int) bool { return line(spans[i]) < line(spans[j]) })
		for _, s := range spans {
			out = append(out, strings.Repeat("  ", depth)+line(s))
			walk(children[s.SpanContext().SpanID()], depth+1)
		}
	}
	walk(roots, 0)
	return out
}

// scenario is a loop of session "build" that runs three iterations and is
// interrupted in the third: iteration 1 runs two tasks, the second fails;
// iteration 2 runs one task, which fails (a failed iteration); iteration 3
// runs one task that cancels the loop's context. Resuming it completes
// iteration 3 and converges. Every task spends 100 tokens and 0.25 of cost.
type scenario struct {
	store  *checkpoint.Memory
	cancel context.CancelFunc
	ctx    context.Context
	eng    func(obs func(iterate.Event)) iterate.Engine[iteratetest.State]
}

func newScenario() *scenario {
	sc := &scenario{store: &checkpoint.Memory{}}
	sc.ctx, sc.cancel = context.WithCancel(context.Background())
	var interrupted atomic.Bool
	use := budget.Usage{Tokens: 100, Cost: 0.25, Calls: 1}
	script := &iteratetest.Script{Steps: []iteratetest.Step{
		{Assessment: gap.Assessment{Coverage: 0.3, Confidence: 0.5}, FailTasks: []int{1}, Usage: use},
		{Assessment: gap.Assessment{Coverage: 0.4, Confidence: 0.6}, Err: errors.New("tool crashed"), Usage: use},
		{Assessment: gap.Assessment{Coverage: 0.5, Confidence: 0.7}, Usage: use,
			Work: func(ctx context.Context, _ iterate.Task) error {
				if interrupted.CompareAndSwap(false, true) {
					sc.cancel() // Ctrl+C during iteration 3
					return ctx.Err()
				}
				return nil
			}},
		{Assessment: gap.Assessment{Coverage: 0.8, Confidence: 0.85}},
	}}
	strategy := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		coverage := gap.Gap{Kind: gap.Coverage, Priority: gap.P1}
		switch sit.Iteration {
		case 1:
			return iterate.Plan{Action: iterate.Expand, Tasks: []iterate.Task{
				{Role: "explore", Gaps: []gap.Gap{coverage}},
				{Role: "verify", Gaps: []gap.Gap{{Kind: gap.Confidence, Priority: gap.P2}, coverage}},
			}}, nil
		case 2:
			return iterate.Plan{Action: iterate.Retry, Tasks: []iterate.Task{{Role: "explore", Gaps: []gap.Gap{coverage}}}}, nil
		}
		return iterate.Plan{Action: iterate.Refine, Tasks: []iterate.Task{{Role: "citation"}}}, nil
	})
	sc.eng = func(obs func(iterate.Event)) iterate.Engine[iteratetest.State] {
		return iterate.New(script, iterate.WithStrategy(strategy), iterate.WithSession("build"),
			iterate.WithCheckpointer(sc.store), iterate.WithMaxIterations(5), iterate.WithObserver(obs))
	}
	return sc
}

// The span tree of the interrupted run, asserted whole.
var interruptedRun = []string{
	`refine.run session=build resumed=false max_iterations=5 status=interrupted reason=interrupted: context canceled iteration=2 iterations=2 usage.tokens=300 coverage=0.5 confidence=0.7`,
	`  refine.checkpoint.save iteration=1 checkpoint.generation=1 status=running`,
	`  refine.checkpoint.save iteration=2 checkpoint.generation=2 status=running`,
	`  refine.checkpoint.save iteration=2 checkpoint.generation=3 status=interrupted`,
	`  refine.iteration session=build iteration=1 action=expand decision=continue gaps=2 coverage=0.3 confidence=0.5 tasks=2 tasks.failed=1 failed=false usage.tokens=200 usage.cost=0.5 usage.calls=2`,
	`    invoke_agent explore task.id=1.1 task.role=explore action=expand gap.kind=coverage gap.priority=P1 usage.tokens=100 usage.cost=0.25 gen_ai.operation.name=invoke_agent gen_ai.agent.name=explore`,
	`    invoke_agent verify task.id=1.2 task.role=verify action=expand gap.kind=confidence gap.priority=P2 usage.tokens=100 usage.cost=0.25 gen_ai.operation.name=invoke_agent gen_ai.agent.name=verify [Error: scripted failure of task 1.2] +exception`,
	`    refine.assess iteration=1`,
	`    refine.integrate iteration=1`,
	`    refine.plan iteration=1`,
	`  refine.iteration session=build iteration=2 action=retry decision=continue gaps=2 coverage=0.4 confidence=0.6 tasks=1 tasks.failed=1 failed=true usage.tokens=100 usage.cost=0.25 usage.calls=1 [Error: tool crashed] +exception`,
	`    invoke_agent explore task.id=2.1 task.role=explore action=retry gap.kind=coverage gap.priority=P1 usage.tokens=100 usage.cost=0.25 gen_ai.operation.name=invoke_agent gen_ai.agent.name=explore [Error: tool crashed] +exception`,
	`    refine.assess iteration=2`,
	`    refine.integrate iteration=2`,
	`    refine.plan iteration=2`,
	`  refine.iteration session=build iteration=3 action=refine decision=continue gaps=2 coverage=0.5 confidence=0.7 [Error: loop stopped mid-iteration: interrupted: context canceled]`,
	`    invoke_agent citation task.id=3.1 task.role=citation action=refine usage.tokens=100 usage.cost=0.25 gen_ai.operation.name=invoke_agent gen_ai.agent.name=citation [Error: context canceled] +exception`,
	`    refine.assess iteration=3`,
	`    refine.plan iteration=3`,
}

// The span tree of the resumed run.
var resumedRun = []string{
	`refine.run session=build resumed=true max_iterations=5 completed_iterations=2 status=converged reason=converged: coverage 0.80 ≥ 0.70, confidence 0.85 ≥ 0.80, conflicts 0 ≤ 2, questions 0/0 answered iteration=3 iterations=1 usage.tokens=100 coverage=0.8 confidence=0.85`,
	`  refine.assess iteration=4`,
	`  refine.checkpoint.save iteration=3 checkpoint.generation=4 status=running`,
	`  refine.checkpoint.save iteration=3 checkpoint.generation=5 status=converged`,
	`  refine.iteration session=build iteration=3 action=refine decision=continue gaps=2 coverage=0.5 confidence=0.7 tasks=1 tasks.failed=0 failed=false usage.tokens=100 usage.cost=0.25 usage.calls=1`,
	`    invoke_agent citation task.id=3.1 task.role=citation action=refine usage.tokens=100 usage.cost=0.25 gen_ai.operation.name=invoke_agent gen_ai.agent.name=citation`,
	`    refine.assess iteration=3`,
	`    refine.integrate iteration=3`,
	`    refine.plan iteration=3`,
}

func TestSpanTreeOfInterruptedRun(t *testing.T) {
	tel := newTelemetry(t)
	sc := newScenario()
	res, err := sc.eng(tel.observer().Observe).Run(sc.ctx, iteratetest.State{})
	if res.Status != iterate.Interrupted || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %s, %v; want interrupted, context.Canceled", res.Status, err)
	}
	if diff := cmp.Diff(interruptedRun, tree(t, tel.spans)); diff != "" {
		t.Errorf("span tree (-want +got):\n%s", diff)
	}
	for _, s := range tel.spans.Ended() {
		if s.SpanKind() != trace.SpanKindInternal {
			t.Errorf("%s: kind %s, want internal", s.Name(), s.SpanKind())
		}
		if s.EndTime().Before(s.StartTime()) {
			t.Errorf("%s ends before it starts", s.Name())
		}
	}
	run := only(t, tel.spans, "refine.run")
	if !run.Parent().IsRemote() || !run.Parent().IsSampled() {
		t.Errorf("run's parent = %v, want the session's remote, sampled span context", run.Parent())
	}
	if run.Status().Code != codes.Unset || !attr(run.Attributes(), "refine.interrupted").AsBool() {
		t.Errorf("interrupted run: status %v, refine.interrupted %v; want no error status, marked interrupted",
			run.Status(), attr(run.Attributes(), "refine.interrupted"))
	}
	for _, s := range tel.spans.Ended() {
		if s.Name() == "refine.checkpoint.save" && attr(s.Attributes(), "refine.checkpoint.bytes").AsInt64() <= 0 {
			t.Errorf("save of generation %d: %d bytes", attr(s.Attributes(), "refine.checkpoint.generation").AsInt64(),
				attr(s.Attributes(), "refine.checkpoint.bytes").AsInt64())
		}
	}
}

// attr returns the value of the attribute k.
func attr(attrs []attribute.KeyValue, k attribute.Key) attribute.Value {
	for _, a := range attrs {
		if a.Key == k {
			return a.Value
		}
	}
	return attribute.Value{}
}

// only returns the one ended span of that name that is not resumed.
func only(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name && !attr(s.Attributes(), "refine.resumed").AsBool() {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %q, want 1", len(found), name)
	}
	return found[0]
}

// A resumed run is in the trace of the run it continues and links to it:
// to its span when the same Observer saw it, to the session's span context
// when another did (a resume in another process).
func TestResumeLinksToTheRunItContinues(t *testing.T) {
	for _, tc := range []struct {
		name         string
		sameObserver bool
		link         string
	}{
		{"same observer", true, "previous_run"},
		{"another observer", false, "session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			sc := newScenario()
			obs := tel.observer()
			if _, err := sc.eng(obs.Observe).Run(sc.ctx, iteratetest.State{}); !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v", err)
			}
			if !tc.sameObserver {
				obs = tel.observer()
			}
			res, err := sc.eng(obs.Observe).Resume(context.Background())
			if err != nil || res.Status != iterate.Converged {
				t.Fatalf("Resume = %s, %v; want converged", res.Status, err)
			}

			want := append(slices.Clone(interruptedRun), resumedRun...)
			got := tree(t, tel.spans)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("span tree (-want +got):\n%s", diff)
			}

			var first, resumed sdktrace.ReadOnlySpan
			for _, s := range tel.spans.Ended() {
				if s.Name() == "refine.run" {
					if attr(s.Attributes(), "refine.resumed").AsBool() {
						resumed = s
					} else {
						first = s
					}
				}
			}
			if first.SpanContext().TraceID() != resumed.SpanContext().TraceID() {
				t.Errorf("trace IDs differ: %s, %s", first.SpanContext().TraceID(), resumed.SpanContext().TraceID())
			}
			if !first.Parent().Equal(resumed.Parent()) {
				t.Errorf("parents differ: %v, %v", first.Parent(), resumed.Parent())
			}
			if n := len(first.Links()); n != 0 {
				t.Errorf("first run has %d links, want 0", n)
			}
			if len(resumed.Links()) != 1 {
				t.Fatalf("resumed run has %d links, want 1", len(resumed.Links()))
			}
			link := resumed.Links()[0]
			target := first.Parent() // the session's span context
			if tc.sameObserver {
				target = first.SpanContext()
			}
			if !link.SpanContext.Equal(target) {
				t.Errorf("link to %v, want %v", link.SpanContext, target)
			}
			if got := attr(link.Attributes, "refine.link").AsString(); got != tc.link {
				t.Errorf("link attributes %v, want refine.link=%s", link.Attributes, tc.link)
			}
		})
	}
}

// point is one data point of a metric: its attributes and value (the count
// of a histogram).
type point struct {
	Attrs string
	Value float64
}

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string][]point{}
	attrs := func(s attribute.Set) string {
		var kv []string
		for _, a := range s.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.String())
		}
		return strings.Join(kv, ",")
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != oteliterate.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			var ps []point
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrs(p.Attributes), float64(p.Value)})
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrs(p.Attributes), p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					ps = append(ps, point{attrs(p.Attributes), float64(p.Count)})
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i].Attrs < ps[j].Attrs })
			out[m.Name+" "+m.Unit] = ps
		}
	}
	return out
}

// The metrics of the interrupted run and its resume, through one Observer
// or two sharing a MeterProvider.
func TestMetrics(t *testing.T) {
	const (
		s        = "refine.session=build"
		explore  = "refine.session=build,refine.task.role=explore"
		verify   = "refine.session=build,refine.task.role=verify"
		citation = "refine.session=build,refine.task.role=citation"
	)
	want := map[string][]point{
		"refine.iterations {iteration}": {{s, 3}},
		"refine.iteration.duration s":   {{s, 3}},
		"refine.tasks {task}":           {{explore, 2}, {citation, 2}, {verify, 1}},
		"refine.task.duration s":        {{explore, 2}, {citation, 2}, {verify, 1}},
		"refine.failures {failure}": {
			{"refine.scope=iteration," + s, 1},
			{"refine.scope=task," + explore, 1},
			{"refine.scope=task," + citation, 1},
			{"refine.scope=task," + verify, 1},
		},
		// The interrupted task's spending counts; the resumed one's too.
		"refine.tokens {token}": {{explore, 200}, {citation, 200}, {verify, 100}},
		"refine.cost ":          {{explore, 0.5}, {citation, 0.5}, {verify, 0.25}},
	}
	for _, twoObservers := range []bool{false, true} {
		t.Run(fmt.Sprintf("two observers %v", twoObservers), func(t *testing.T) {
			tel := newTelemetry(t)
			sc := newScenario()
			obs := tel.observer()
			_, _ = sc.eng(obs.Observe).Run(sc.ctx, iteratetest.State{})
			if twoObservers {
				obs = tel.observer()
			}
			if _, err := sc.eng(obs.Observe).Resume(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := collect(t, tel.reader)
			sortPoints := cmp.Transformer("sort", func(ps []point) []point {
				ps = slices.Clone(ps)
				sort.Slice(ps, func(i, j int) bool { return ps[i].Attrs < ps[j].Attrs })
				return ps
			})
			if diff := cmp.Diff(want, got, sortPoints); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
		})
	}
}

// Events delivered directly: what the engine does not do but an Observer
// must survive.
func TestEdgeCases(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := iterate.Task{Iteration: 1, Role: "explore"}
	for _, tc := range []struct {
		name   string
		events []iterate.Event
		want   []string
	}{
		{
			name: "stop ends the open iteration and task spans",
			events: []iterate.Event{
				iterate.LoopStarted{Session: "s", Time: start, StartedAt: start},
				iterate.IterationStarted{Time: start},
				iterate.TaskStarted{Task: task},
				iterate.LoopStopped{Status: iterate.Aborted, Reason: "too many failures", Time: start.Add(time.Second)},
			},
			want: []string{
				`refine.run session=s resumed=false max_iterations=0 status=aborted reason=too many failures iteration=0 iterations=0 usage.tokens=0 [Error: too many failures]`,
				`  refine.iteration session=s iteration=0 [Error: loop stopped mid-iteration: too many failures]`,
				`    invoke_agent explore task.id=1.1 task.role=explore action= gen_ai.operation.name=invoke_agent gen_ai.agent.name=explore [Error: loop stopped mid-iteration: too many failures]`,
			},
		},
		{
			name: "events outside a run are ignored",
			events: []iterate.Event{
				iterate.IterationStarted{Time: start},
				iterate.TaskEnded{Task: task},
				iterate.Warned{Message: "w"},
				iterate.LoopStopped{Status: iterate.Converged},
			},
		},
		{
			name: "a second LoopStarted of a session ends its run that never stopped",
			events: []iterate.Event{
				iterate.LoopStarted{Session: "a", Time: start, StartedAt: start},
				iterate.IterationStarted{Time: start},
				iterate.LoopStarted{Session: "a", Time: start, StartedAt: start},
				iterate.LoopStopped{Status: iterate.Converged, Reason: "done", Time: start},
			},
			want: []string{
				`refine.run session=a resumed=false max_iterations=0 [Error: another run of the session started before this one stopped]`,
				`  refine.iteration session=a iteration=0 [Error: another run of the session started before this one stopped]`,
				`refine.run session=a resumed=false max_iterations=0 status=converged reason=done iteration=0 iterations=0 usage.tokens=0`,
			},
		},
		{
			name: "task and iteration ends without their starts",
			events: []iterate.Event{
				iterate.LoopStarted{Session: "s", Time: start, StartedAt: start},
				iterate.TaskEnded{Task: task, Err: errors.New("boom")},
				iterate.IterationEnded{Time: start, Tasks: 1, FailedTasks: 1, Failed: true},
				iterate.LoopStopped{Status: iterate.Stuck, Reason: "stuck", Time: start},
			},
			want: []string{
				`refine.run session=s resumed=false max_iterations=0 status=stuck reason=stuck iteration=0 iterations=1 usage.tokens=0`,
				`  invoke_agent explore task.id=1.1 task.role=explore action= usage.tokens=0 usage.cost=0 gen_ai.operation.name=invoke_agent gen_ai.agent.name=explore [Error: boom] +exception`,
				`  refine.iteration session=s iteration=0 tasks=1 tasks.failed=1 failed=true usage.tokens=0 usage.cost=0 usage.calls=0 [Error: iteration failed]`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel := newTelemetry(t)
			obs := tel.observer()
			for _, e := range tc.events {
				obs.Observe(e)
			}
			if diff := cmp.Diff(tc.want, tree(t, tel.spans)); diff != "" {
				t.Errorf("span tree (-want +got):\n%s", diff)
			}
		})
	}
}

// Many tasks end at once from their goroutines, with host warnings: run
// with -race.
func TestConcurrentTasks(t *testing.T) {
	tel := newTelemetry(t)
	const n = 16
	script := &iteratetest.Script{Steps: []iteratetest.Step{
		{Assessment: gap.Assessment{Coverage: 0.1}, Usage: budget.Usage{Tokens: 1},
			Work: func(ctx context.Context, task iterate.Task) error {
				iterate.Warn(ctx, "task "+task.ID())
				return nil
			}},
	}}
	many := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, n)}, nil
	})
	eng := iterate.New(script, iterate.WithStrategy(many), iterate.WithParallelism(n), iterate.WithMaxIterations(2),
		iterate.WithObserver(tel.observer().Observe))
	if _, err := eng.Run(context.Background(), iteratetest.State{}); err != nil {
		t.Fatal(err)
	}
	tree(t, tel.spans) // checks every span ended
	// The run, and each iteration with its n tasks and its assess, plan
	// and integrate spans; the assessment that stopped the loop.
	if got, want := len(tel.spans.Ended()), 1+2*(n+4)+1; got != want {
		t.Errorf("%d spans, want %d", got, want)
	}
	warnings := 0
	for _, s := range tel.spans.Ended() {
		for _, ev := range s.Events() {
			if ev.Name == "refine.warning" {
				if s.Name() != "refine.iteration" {
					t.Errorf("warning on %s, want on the iteration", s.Name())
				}
				warnings++
			}
		}
	}
	if warnings != 2*n {
		t.Errorf("%d warnings, want %d", warnings, 2*n)
	}
	got := collect(t, tel.reader)
	if want := []point{{"refine.session=default,refine.task.role=", 2 * n}}; !cmp.Equal(want, got["refine.tokens {token}"]) {
		t.Errorf("tokens %v, want %v", got["refine.tokens {token}"], want)
	}
}

// Without options, an Observer records with the global providers.
func TestGlobalProvidersByDefault(t *testing.T) {
	tel := newTelemetry(t)
	prevTP, prevMP := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(tel.tp)
	otel.SetMeterProvider(tel.mp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetMeterProvider(prevMP)
	})
	step := func(_ context.Context, n int, _ iterate.Round) (int, error) { return n + 1, nil }
	obs := oteliterate.New(oteliterate.WithTracerProvider(nil)) // nil: the global one
	eng := iterate.New(iterate.Func(step), iterate.WithMaxIterations(1), iterate.WithObserver(obs.Observe))
	if _, err := eng.Run(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if got := len(tel.spans.Ended()); got != 7 { // run, iteration, task, assess, plan, integrate; the last assess
		t.Errorf("%d spans, want 7", got)
	}
	if got := collect(t, tel.reader)["refine.iterations {iteration}"]; len(got) != 1 || got[0].Value != 1 {
		t.Errorf("refine.iterations = %v, want 1", got)
	}
}

// Resume reports a fallback to an older checkpoint before LoopStarted: the
// events go on the run that follows.
func TestEventsBeforeTheRunGoOnIt(t *testing.T) {
	tel := newTelemetry(t)
	obs := tel.observer()
	now := time.Now()
	for _, e := range []iterate.Event{
		iterate.Warned{Message: "checkpoint generations [3] damaged"},
		iterate.Recovered{Generation: 2, Skipped: []uint64{3}},
		iterate.LoopStarted{Session: "s", Resumed: true, Completed: 2, Time: now, StartedAt: now},
		iterate.Warned{Message: "budget low"},
		iterate.LoopStopped{Status: iterate.Interrupted, Reason: "interrupted", Time: now},
	} {
		obs.Observe(e)
	}
	ended := tel.spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans, want 1", len(ended))
	}
	var got []string
	for _, ev := range ended[0].Events() {
		var kv []string
		for _, a := range ev.Attributes {
			kv = append(kv, string(a.Key)+"="+a.Value.String())
		}
		got = append(got, ev.Name+" "+strings.Join(kv, " "))
	}
	want := []string{
		"refine.warning refine.message=checkpoint generations [3] damaged",
		"refine.recovered refine.checkpoint.generation=2 refine.checkpoint.skipped=1",
		"refine.warning refine.message=budget low",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run events (-want +got):\n%s", diff)
	}
	// The link of a resume this Observer did not see: the session's context.
	if links := ended[0].Links(); len(links) != 1 || !links[0].SpanContext.Equal(ended[0].Parent()) {
		t.Errorf("links %v, want one to the parent %v", links, ended[0].Parent())
	}
}

// A run started under a context that carries a span (a request's) is its
// child, linked to the session's span context; an interruption by the
// caller is not an error; the resume, under another request, is that
// request's child, linked to the run it continues and to the session.
// Checked with the SDK's in-memory exporter.
func TestRunsUnderRequestSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs := oteliterate.New(oteliterate.WithTracerProvider(tp), oteliterate.WithMeterProvider(sdkmetric.NewMeterProvider()))
	tracer := tp.Tracer("host")

	sc := newScenario()
	reqCtx, req := tracer.Start(sc.ctx, "POST /research")
	if _, err := sc.eng(obs.Observe).Run(reqCtx, iteratetest.State{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	req.End()
	req2Ctx, req2 := tracer.Start(context.Background(), "POST /research/resume")
	if _, err := sc.eng(obs.Observe).Resume(req2Ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	req2.End()

	var runs []tracetest.SpanStub
	saves := 0
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "refine.run":
			runs = append(runs, s)
		case "refine.checkpoint.save":
			saves++
			if attr(s.Attributes, "refine.checkpoint.bytes").AsInt64() <= 0 {
				t.Errorf("a save of %d bytes", attr(s.Attributes, "refine.checkpoint.bytes").AsInt64())
			}
		}
	}
	if len(runs) != 2 || saves != 5 {
		t.Fatalf("%d runs and %d saves, want 2 and 5", len(runs), saves)
	}
	first, second := runs[0], runs[1]
	if first.Parent.SpanID() != req.SpanContext().SpanID() || second.Parent.SpanID() != req2.SpanContext().SpanID() {
		t.Errorf("runs' parents %v, %v; want the requests' spans", first.Parent.SpanID(), second.Parent.SpanID())
	}
	if first.Status.Code != codes.Unset || !attr(first.Attributes, "refine.interrupted").AsBool() {
		t.Errorf("interrupted run: status %v, want unset and refine.interrupted", first.Status)
	}
	links := map[string]trace.SpanContext{}
	for _, l := range second.Links {
		links[attr(l.Attributes, "refine.link").AsString()] = l.SpanContext
	}
	if !links["previous_run"].Equal(first.SpanContext) {
		t.Errorf("the resume's link to the previous run %v, want %v", links["previous_run"], first.SpanContext)
	}
	if len(first.Links) != 1 || !first.Links[0].SpanContext.Equal(links["session"]) || !links["session"].IsValid() {
		t.Errorf("both runs link to the session's span context: %v, %v", first.Links, links["session"])
	}
}

// One Observer follows 20 loops running at once: every span belongs to the
// run of its own session.
func TestOneObserverManyLoops(t *testing.T) {
	tel := newTelemetry(t)
	obs := tel.observer()
	const loops = 20
	errs := make(chan error, loops)
	for i := range loops {
		go func() {
			script := &iteratetest.Script{Steps: []iteratetest.Step{
				{Assessment: gap.Assessment{Coverage: 0.2, Confidence: 0.5}, Usage: budget.Usage{Tokens: int64(i + 1)}},
				{Assessment: gap.Assessment{Coverage: 0.5, Confidence: 0.6}, Usage: budget.Usage{Tokens: int64(i + 1)}},
				{Assessment: gap.Assessment{Coverage: 0.9, Confidence: 0.9}},
			}}
			eng := iterate.New(script, iterate.WithSession(fmt.Sprintf("loop-%02d", i)),
				iterate.WithCheckpointer(&checkpoint.Memory{}), iterate.WithObserver(obs.Observe))
			_, err := eng.Run(context.Background(), iteratetest.State{})
			errs <- err
		}()
	}
	for range loops {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	tree(t, tel.spans) // every span ended
	ended := tel.spans.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byID[s.SpanContext().SpanID()] = s
	}
	runs := map[string]int{}
	for _, s := range ended {
		session := attr(s.Attributes(), "refine.session").AsString()
		if session == "" {
			t.Errorf("%s has no session", s.Name())
			continue
		}
		r := s
		for r.Name() != "refine.run" {
			p, ok := byID[r.Parent().SpanID()]
			if !ok {
				t.Fatalf("%s of %s has no run above it", s.Name(), session)
			}
			r = p
		}
		if owner := attr(r.Attributes(), "refine.session").AsString(); owner != session {
			t.Errorf("%s of session %s is under the run of %s", s.Name(), session, owner)
		}
		if s.Name() == "refine.run" {
			runs[session]++
			if attr(s.Attributes(), "refine.status").AsString() != "early_exit" || attr(s.Attributes(), "refine.iterations").AsInt64() != 2 {
				t.Errorf("run of %s: %v", session, s.Attributes())
			}
		}
	}
	if len(runs) != loops {
		t.Errorf("%d runs, want %d", len(runs), loops)
	}
}

// Input and output tokens, and the input's cached parts, are recorded as
// the GenAI conventions name them, on the task's span and in the token
// counter by type.
func TestInputOutputTokens(t *testing.T) {
	tel := newTelemetry(t)
	script := &iteratetest.Script{Steps: []iteratetest.Step{
		{Assessment: gap.Assessment{Coverage: 0.2}, Usage: budget.Usage{Tokens: 100, InputTokens: 70, OutputTokens: 25,
			CacheReadTokens: 40, CacheWriteTokens: 10}},
		{Assessment: gap.Assessment{Coverage: 0.9, Confidence: 0.9}},
	}}
	eng := iterate.New(script, iterate.WithSession("tok"), iterate.WithObserver(tel.observer().Observe))
	if _, err := eng.Run(context.Background(), iteratetest.State{}); err != nil {
		t.Fatal(err)
	}
	var task sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if strings.HasPrefix(s.Name(), "invoke_agent") {
			task = s
		}
	}
	if task == nil || attr(task.Attributes(), "gen_ai.usage.input_tokens").AsInt64() != 70 ||
		attr(task.Attributes(), "gen_ai.usage.output_tokens").AsInt64() != 25 ||
		attr(task.Attributes(), "gen_ai.usage.cache_read.input_tokens").AsInt64() != 40 ||
		attr(task.Attributes(), "gen_ai.usage.cache_creation.input_tokens").AsInt64() != 10 {
		t.Fatalf("task span %v", task)
	}
	got := collect(t, tel.reader)["refine.tokens {token}"]
	want := []point{
		{"refine.session=tok,refine.task.role=explore", 5},
		{"gen_ai.token.type=input,refine.session=tok,refine.task.role=explore", 70},
		{"gen_ai.token.type=output,refine.session=tok,refine.task.role=explore", 25},
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Attrs < want[j].Attrs })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
}

// TestReplayedTasksCountedOnce: the tasks a resumed iteration replays from
// the journal were counted when they ran; the metrics count them once, so
// the tokens counted equal what the loop spent (Result.Usage, across the
// resume), and their spans are marked replayed. (Mutation caught: counting
// a replayed task's usage again, as before, counts 200 tokens twice.)
func TestReplayedTasksCountedOnce(t *testing.T) {
	tel := newTelemetry(t)
	strategy := iterate.StrategyFunc(func(_ context.Context, sit *iterate.Situation) (iterate.Plan, error) {
		return iterate.Plan{Action: iterate.Refine, Tasks: []iterate.Task{{Role: "a"}, {Role: "b"}, {Role: "c"}}}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Not a *FuncWorker, which is one call per iteration: one call per task.
	worker := func(interrupt bool) iterate.Worker[int] {
		return perTask{iterate.Func(func(ctx context.Context, n int, r iterate.Round) (int, error) {
			r.Charge(budget.Usage{Tokens: 100})
			if r.Task.Index == 2 && interrupt {
				cancel() // Ctrl+C during the third task, which spent its tokens
				return n, ctx.Err()
			}
			return n + 1, nil
		})}
	}
	store := &checkpoint.Memory{}
	opts := []iterate.Option{iterate.WithStrategy(strategy), iterate.WithMaxIterations(1), iterate.WithSession("replay"),
		iterate.WithCheckpointer(store, iterate.Journal), iterate.WithParallelism(1), iterate.WithObserver(tel.observer().Observe)}
	if _, err := iterate.New(worker(true), opts...).Run(ctx, 0); !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
	res, err := iterate.New(worker(false), opts...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var counted float64
	for _, p := range collect(t, tel.reader)["refine.tokens {token}"] {
		counted += p.Value
	}
	if counted != float64(res.Usage.Tokens) || res.Usage.Tokens != 400 {
		t.Errorf("tokens counted %v, the loop spent %d (want 400: three tasks and the interrupted attempt)", counted, res.Usage.Tokens)
	}
	replayed := 0
	for _, s := range tel.spans.Ended() {
		if attr(s.Attributes(), "refine.task.replayed").AsBool() {
			replayed++
		}
	}
	if replayed != 2 {
		t.Errorf("%d task spans marked replayed, want 2", replayed)
	}
}

// perTask runs a Func's step once per task of a plan of several, as a
// Worker that is not a *FuncWorker does.
type perTask struct{ *iterate.FuncWorker[int] }
