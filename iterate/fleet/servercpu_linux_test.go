package fleet_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
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

// machineCPU returns the machine's busy and total CPU time so far, in
// clock ticks, from /proc/stat's first line.
func machineCPU() (busy, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for i, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// schedWait returns the time the processes pids (or, for nil, this
// process's live threads: a thread gone meanwhile takes its time with it)
// have spent on a CPU and waiting for one, from schedstat's first two
// fields.
func schedWait(pids []uint32) (run, wait time.Duration) {
	var files []string
	for _, pid := range pids {
		files = append(files, "/proc/"+strconv.Itoa(int(pid))+"/schedstat")
	}
	if pids == nil {
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, t := range tasks {
			files = append(files, "/proc/self/task/"+t.Name()+"/schedstat")
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fs := strings.Fields(string(b))
		if len(fs) < 2 {
			continue
		}
		r, _ := strconv.ParseInt(fs[0], 10, 64)
		w, _ := strconv.ParseInt(fs[1], 10, 64)
		run, wait = run+time.Duration(r), wait+time.Duration(w)
	}
	return run, wait
}

// serverTimes returns, per process named postgres, its time on a CPU and
// waiting for one (schedstat's first two fields).
func serverTimes() map[int][2]time.Duration {
	out := map[int][2]time.Duration{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile("/proc/" + d.Name() + "/comm"); err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		if r, w := schedWait([]uint32{uint32(pid)}); r > 0 {
			out[pid] = [2]time.Duration{r, w}
		}
	}
	return out
}

// serverDelta returns the CPU and wait time postgres processes used
// between two serverTimes (a process new in after counts from zero).
func serverDelta(before, after map[int][2]time.Duration) (run, wait time.Duration) {
	for pid, a := range after {
		b := before[pid]
		run, wait = run+a[0]-b[0], wait+a[1]-b[1]
	}
	return run, wait
}

// cpuMeter is what startCPU reads: the machine's CPU time, the server's
// processes' and this process's threads', so far.
type cpuMeter struct {
	busy, total int64
	server      map[int][2]time.Duration
	run, wait   time.Duration
}

// startCPU reads the CPU times a cpuMeter holds, now.
func startCPU() cpuMeter {
	m := cpuMeter{server: serverTimes()}
	m.busy, m.total = machineCPU()
	m.run, m.wait = schedWait(nil)
	return m
}

// log logs, since m was read, how busy the machine was and the CPU time
// the server and this process used, and waited for, per unit of n (a
// session, a job).
func (m cpuMeter) log(t *testing.T, what string, n int) {
	busy, total := machineCPU()
	srun, swait := serverDelta(m.server, serverTimes())
	run, wait := schedWait(nil)
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)/float64(n))
	}
	t.Logf("%s: machine %.0f%% busy; each of %d: server %s on a CPU (%s waiting for one), this process %s (%s waiting)",
		what, 100*float64(busy-m.busy)/float64(max(total-m.total, 1)), n, per(srun), per(swait), per(run-m.run), per(wait-m.wait))
}
