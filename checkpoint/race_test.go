//go:build race

package checkpoint

// raceEnabled is true when the race detector is on; allocation counts are
// not checked then (sync.Pool drops items at random under it).
const raceEnabled = true
