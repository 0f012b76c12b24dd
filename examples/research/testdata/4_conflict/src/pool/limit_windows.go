//go:build windows

package pool

// maxOpenHandles is the maximum number of open handles on Windows, whose
// handle tables are smaller: the maximum number of handles is lower.
const maxOpenHandles = 512
