//go:build unix

package xcmd

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Prepare configures cmd, made by exec.CommandContext and not yet started,
// to run in a process group of its own: the cancellation of its context
// sends SIGTERM to the group, and grace later (cmd.WaitDelay) the command
// is killed and its output pipes closed; [Wait] then kills the rest of the
// group. Started with [Start] (or [Run]), the whole group is also killed
// when the program dies, even killed outright (see the package doc).
// Prepare keeps the other fields of cmd.SysProcAttr. grace should be
// positive: with 0, a command that ignores SIGTERM is waited for as long
// as it runs (the rule of exec.Cmd.WaitDelay).
//
// A command in its own group is not in the terminal's foreground group:
// it must not read from the terminal (give it another standard input).
func Prepare(cmd *exec.Cmd, grace time.Duration) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	setParentDeathSignal(cmd.SysProcAttr)
	g := &group{}
	groups.Store(cmd, g)
	cmd.Cancel = func() error {
		g.mu.Lock()
		g.cancelled = time.Now()
		g.mu.Unlock()
		return signalGroup(cmd, syscall.SIGTERM)
	}
	cmd.WaitDelay = grace
}

// group is what [Prepare] and [Start] know of a command's process group.
type group struct {
	// watchdog is the group's first member and leader, started before
	// the command; its standard input is the read end of a pipe whose
	// write end, pipe, only this program holds. When this program dies,
	// however it dies, the kernel closes the pipe: the watchdog reads the
	// end of its input and kills the group (kill -9 0).
	watchdog *exec.Cmd
	pipe     *os.File

	mu        sync.Mutex
	cancelled time.Time // when Cancel sent SIGTERM; zero before
}

// groups holds the group of each command [Prepare] configured, until
// [Wait] returns (or [Start] fails).
var groups sync.Map // *exec.Cmd → *group

func groupOf(cmd *exec.Cmd) *group {
	if g, ok := groups.Load(cmd); ok {
		return g.(*group)
	}
	return nil
}

// watchdogScript is the watchdog's program: it reads its standard input
// until the end, which comes only when this program has closed the pipe or
// died, then kills its process group. It ignores SIGTERM where [Wait] can
// tell it apart from the rest of the group (watchdogIgnoresTerm), so that
// the cancellation does not end it before the command.
func watchdogScript() string {
	s := "read x; kill -9 0"
	if watchdogIgnoresTerm {
		s = "trap '' TERM; " + s
	}
	return s
}

// Start starts cmd, which [Prepare] has configured, in a new process group
// led by a watchdog: a small sh that kills the group when this program
// ends. So, when the program is killed outright (kill -9), the command and
// every process it started that stayed in its group die with it; the
// command alone would die of the parent-death signal (Linux), its children
// would be orphaned. Without /bin/sh, the command starts in a group of its
// own, without the watchdog. Its error is that of exec.Cmd.Start.
func Start(cmd *exec.Cmd) error {
	g := groupOf(cmd)
	if g == nil || cmd.Err != nil || cmd.Process != nil {
		return cmd.Start()
	}
	if err := g.startWatchdog(); err == nil {
		cmd.SysProcAttr.Pgid = g.watchdog.Process.Pid
	}
	if err := cmd.Start(); err != nil {
		g.end()
		groups.Delete(cmd)
		return err
	}
	return nil
}

// startWatchdog starts the watchdog in a new process group.
func (g *group) startWatchdog() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	wd := exec.Command("/bin/sh", "-c", watchdogScript())
	wd.Stdin = r
	wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := wd.Start(); err != nil {
		w.Close()
		return err
	}
	g.watchdog, g.pipe = wd, w
	return nil
}

// end kills the watchdog, reaps it and closes the pipe.
func (g *group) end() {
	if g.watchdog == nil {
		return
	}
	g.watchdog.Process.Kill()
	g.watchdog.Wait()
	g.pipe.Close()
	g.watchdog = nil
}

// pgid returns the id of cmd's process group: its watchdog's pid, or the
// command's own; 0 before it starts.
func pgid(cmd *exec.Cmd) int {
	if g := groupOf(cmd); g != nil && g.watchdog != nil {
		return g.watchdog.Process.Pid
	}
	if cmd.Process == nil {
		return 0
	}
	return cmd.Process.Pid
}

// watchdogPid returns the pid of cmd's watchdog, 0 if it has none.
func watchdogPid(cmd *exec.Cmd) int {
	if g := groupOf(cmd); g != nil && g.watchdog != nil {
		return g.watchdog.Process.Pid
	}
	return 0
}

// cancelledAt returns when the cancellation sent SIGTERM to cmd's group.
func cancelledAt(cmd *exec.Cmd) (time.Time, bool) {
	g := groupOf(cmd)
	if g == nil {
		return time.Time{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cancelled, !g.cancelled.IsZero()
}

// release kills what is left of cmd's group, its watchdog included, and
// forgets it.
func release(cmd *exec.Cmd) {
	KillGroup(cmd)
	if g := groupOf(cmd); g != nil {
		g.end()
	}
	groups.Delete(cmd)
}

// KillGroup sends SIGKILL to the process group of cmd, started after
// [Prepare]: the command and the children it left. It does nothing before
// the command starts or when the group is empty.
func KillGroup(cmd *exec.Cmd) {
	_ = signalGroup(cmd, syscall.SIGKILL)
}

// signalGroup sends sig to cmd's process group; os.ErrProcessDone when the
// group is empty.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	id := pgid(cmd)
	if id == 0 {
		return nil
	}
	err := syscall.Kill(-id, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// groupSignalable reports whether cmd's process group has a member, a
// zombie that no one reaped yet included (so would, in theory, a new group
// that reused the id of a group that ended).
func groupSignalable(cmd *exec.Cmd) bool {
	id := pgid(cmd)
	return id != 0 && syscall.Kill(-id, 0) == nil
}

// SignalName names the signal that ended a process, "" when it exited
// normally (or state is nil).
func SignalName(state *os.ProcessState) string {
	if state == nil {
		return ""
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
