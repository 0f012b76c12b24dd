// Package metrics keeps counters in a registry and exports them.
package metrics

// Registry holds the registered counters of the metrics package and
// exports them on demand.
type Registry struct {
	counters map[string]*Counter
}

// Register adds a counter to the metrics registry under its name, so that
// the registry exports it.
func (r *Registry) Register(c *Counter) {
	if r.counters == nil {
		r.counters = map[string]*Counter{}
	}
	r.counters[c.name] = c
}

var defaultRegistry = &Registry{}

func init() { defaultRegistry.Register(requests) }
