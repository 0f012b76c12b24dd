package metrics

// retriesCounter is a metric counter of the registry: the registry exports
// the counter with the other metrics.
type retriesCounter struct{ Counter }

// export5 exports the retries counter of the metrics registry; the
// registry calls it when it exports its counters.
func export5(r *Registry) int64 { return r.counters["retries"].value }

var _ = export5
var _ retriesCounter
