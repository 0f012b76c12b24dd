package oteliterate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/oteliterate"
)

// An Observer records a span per run, iteration and task, and metrics. Here
// the SDK records into memory; a service would export with OTLP instead.
func Example() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer tp.Shutdown(context.Background())
	defer mp.Shutdown(context.Background())

	obs := oteliterate.New(oteliterate.WithTracerProvider(tp), oteliterate.WithMeterProvider(mp))
	step := func(_ context.Context, n int, r iterate.Round) (int, error) {
		if r.Iteration == 2 {
			return n, errors.New("compiler crashed")
		}
		return n + 1, nil
	}
	eng := iterate.New(iterate.Func(step), iterate.WithSession("build"), iterate.WithMaxIterations(3),
		iterate.WithObserver(obs.Observe))
	if _, err := eng.Run(context.Background(), 0); err != nil {
		fmt.Println("error:", err)
	}

	// The spans, in the order they started, indented under their parents.
	depth := map[trace.SpanID]int{}
	for _, s := range spans.Started() {
		d := depth[s.Parent().SpanID()] // 0 for the run: its parent is remote
		depth[s.SpanContext().SpanID()] = d + 1
		fmt.Printf("%s%s", strings.Repeat("  ", d), s.Name())
		attrs := attribute.NewSet(s.Attributes()...)
		for _, k := range []attribute.Key{"refine.task.id", "refine.iteration", "refine.status"} {
			if v, ok := attrs.Value(k); ok {
				fmt.Printf(" %s=%s", k, v.String())
			}
		}
		if st := s.Status(); st.Code != 0 {
			fmt.Printf(" (%s: %s)", st.Code, st.Description)
		}
		fmt.Println()
	}

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "refine.iterations" {
			fmt.Println(m.Name, sum.DataPoints[0].Value)
		}
	}
	// Output:
	// refine.run refine.iteration=3 refine.status=max_iterations
	//   refine.iteration refine.iteration=1
	//     refine.assess refine.iteration=1
	//     refine.plan refine.iteration=1
	//     invoke_agent explore refine.task.id=1.1 refine.iteration=1
	//     refine.integrate refine.iteration=1
	//   refine.iteration refine.iteration=2 (Error: compiler crashed)
	//     refine.assess refine.iteration=2
	//     refine.plan refine.iteration=2
	//     invoke_agent explore refine.task.id=2.1 refine.iteration=2 (Error: compiler crashed)
	//     refine.integrate refine.iteration=2
	//   refine.iteration refine.iteration=3
	//     refine.assess refine.iteration=3
	//     refine.plan refine.iteration=3
	//     invoke_agent explore refine.task.id=3.1 refine.iteration=3
	//     refine.integrate refine.iteration=3
	//   refine.assess refine.iteration=4
	// refine.iterations 3
}
