package pool

// maxOpenHandles is the limit of a pool on Linux: the pool limit is high
// because a process may keep many handles open, so the pool rarely hits
// its limit.
const maxOpenHandles = 1024
