package metrics

// timeoutsCounter is a metric counter of the registry: the registry exports
// the counter with the other metrics.
type timeoutsCounter struct{ Counter }

// export6 exports the timeouts counter of the metrics registry; the
// registry calls it when it exports its counters.
func export6(r *Registry) int64 { return r.counters["timeouts"].value }

var _ = export6
var _ timeoutsCounter
