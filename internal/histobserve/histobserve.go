// Package histobserve hands package iterate the observation of an
// assessment by pointer, converge.History's unexported observe:
// History.Observe takes the assessment, 344 bytes, by value, a copy the
// engine would make on every iteration for nothing. Package converge sets
// Func when it is initialized, before any package that imports it.
package histobserve

// Func is func(h *converge.History, a *gap.Assessment, gaps []gap.Gap),
// History.Observe with a pointer to the assessment, which it does not
// keep. (Its type is not spelled here: this package would import
// converge, which imports it.)
var Func any
