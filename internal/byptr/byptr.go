// Package byptr hands package iterate pointer forms of methods of its
// dependencies that take or return large values: the engine calls them on
// every iteration, where the copies of a value signature cost more than the
// work (see BENCHMARKS.md). The packages that define the methods set the
// variables when they are initialized, before any package that imports
// them. (The functions' types are not spelled here: this package would
// import the packages that import it.)
package byptr

// Observe is func(h *converge.History, a *gap.Assessment, gaps []gap.Gap):
// History.Observe with a pointer to the assessment (344 bytes), which it
// does not keep.
var Observe any

// Complete is func(h *converge.History, failed bool) *converge.Attempt:
// History.Complete counting the attempt and returning the slot of the
// pending attempt, for the engine to fill in place.
var Complete any

// Analyze is func(ctx context.Context, a *gap.Assessment, t gap.Thresholds)
// ([]gap.Gap, error): gap.Default's Analyze with a pointer to the
// assessment, which it does not keep.
var Analyze any
