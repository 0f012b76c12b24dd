package fleet_test

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of the CPU times in /proc.
const clockTick = 10 * time.Millisecond

// backendsCPU returns the CPU time (user and system) the server processes
// pids have used so far, from /proc; ok is false where one cannot be read.
func backendsCPU(pids []uint32) (cpu time.Duration, ok bool) {
	var ticks int
	for _, pid := range pids {
		f, ok := procStat(int(pid))
		if !ok {
			return 0, false
		}
		ticks += f[11] + f[12]
	}
	return time.Duration(ticks) * clockTick, true
}

// procStat returns the numeric fields of /proc/pid/stat after the command
// name, from the state on (index 0 is the state, 1 the parent's pid, 11
// utime, 12 stime, 13 cutime, 14 cstime); the state reads as 0.
func procStat(pid int) ([]int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 15 {
		return nil, false
	}
	out := make([]int, len(fields))
	for j, x := range fields {
		out[j], _ = strconv.Atoi(x)
	}
	return out, true
}
