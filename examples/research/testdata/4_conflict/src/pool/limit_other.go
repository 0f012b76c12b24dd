//go:build !linux && !windows

package pool

// limitNote says which file sets the limit of open handles on other
// systems: the pool has no limit of open handles there.
const limitNote = "no limit"
