package xcmd

import (
	"os/exec"
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
