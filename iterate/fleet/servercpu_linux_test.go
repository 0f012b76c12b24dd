package fleet_test

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// backendsCPU returns the CPU time the server processes pids have used so
// far, in nanoseconds, from /proc/<pid>/schedstat (its first field: the
// time spent on a CPU); ok is false where one cannot be read.
func backendsCPU(pids []uint32) (cpu time.Duration, ok bool) {
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/schedstat")
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		cpu += time.Duration(ns)
	}
	return cpu, true
}
