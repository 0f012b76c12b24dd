package xcmd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"
)

// setParentDeathSignal asks the kernel to kill the command when the thread
// that started it dies (the Go runtime does not end its threads while the
// program runs, unless a goroutine locked to one exits).
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// pPID is waitid's P_PID: wait for the process with the given id.
const pPID = 1

// waitExited blocks until cmd's process has exited, without reaping it:
// while it is a zombie its process group id cannot be reused, so that the
// group can be killed safely. It reports false at once if the process was
// reaped or waitid is unavailable.
func waitExited(cmd *exec.Cmd) bool {
	if cmd.Process == nil {
		return false
	}
	var info [16]uint64 // siginfo_t, 128 bytes
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(cmd.Process.Pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}

// watchdogIgnoresTerm: groupAlive does not count the watchdog, which can
// then outlive the SIGTERM of a cancellation.
const watchdogIgnoresTerm = true

// groupAlive reports whether cmd's process group has a live member other
// than its watchdog. The zombies of its members wait for init to reap
// them, which may take a while: they do not count.
func groupAlive(cmd *exec.Cmd) bool {
	if !groupSignalable(cmd) {
		return false
	}
	id, wd := pgid(cmd), watchdogPid(cmd)
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return true // no /proc to look at
	}
	for _, path := range stats {
		if wd != 0 && path == "/proc/"+strconv.Itoa(wd)+"/stat" {
			continue
		}
		if state, pgrp, ok := procStat(path); ok && pgrp == id && state != 'Z' {
			return true
		}
	}
	return false
}

// procStat reads the state and the process group of a process from its
// /proc/<pid>/stat: "pid (comm) state ppid pgrp ...".
func procStat(path string) (state byte, pgrp int, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(string(f[2]))
	return f[0][0], pgrp, err == nil
}
