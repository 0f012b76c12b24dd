package metrics

// Counter is a metric of the registry: a monotonic counter the registry
// exports with its name.
type Counter struct {
	name  string
	value int64
}

// requests counts the requests; the registry exports the counter.
var requests = &Counter{name: "requests"}

// Add increments the counter; exported counters of the registry only grow.
func (c *Counter) Add(n int64) { c.value += n }

func bump() { requests.Add(1) }

var _ = bump
