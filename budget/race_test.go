//go:build race

package budget_test

// raceEnabled is true when the race detector is on; allocation counts are
// not checked then.
const raceEnabled = true
