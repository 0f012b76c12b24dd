package metrics

// queuedCounter is a metric counter of the registry: the registry exports
// the counter with the other metrics.
type queuedCounter struct{ Counter }

// export8 exports the queued counter of the metrics registry; the
// registry calls it when it exports its counters.
func export8(r *Registry) int64 { return r.counters["queued"].value }

var _ = export8
var _ queuedCounter
