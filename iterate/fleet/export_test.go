package fleet

import "time"

// ReconcileQuery is reconcileQuery, for the tests of its cost.
func ReconcileQuery(f *Fleet, window time.Duration) (string, []any) { return f.reconcileQuery(window) }
