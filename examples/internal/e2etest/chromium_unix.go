//go:build unix

package e2etest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// chromiumAttempts is how many times Chromium is started when it crashes:
// a headless Chromium now and then dies of a signal before rendering
// anything (seen once in CI: a segmentation fault at start), which says
// nothing about the page under test.
const chromiumAttempts = 3

// Chromium runs a headless Chromium (Debian's chromium package) with args
// followed by url, and returns its standard output; it skips t when there
// is no chromium in PATH. Chromium runs in a process group of its own,
// killed whole when it ends or outlives 90 s, with a fresh profile removed
// when t ends. A Chromium that dies of a signal it was not sent is started
// again, up to three times in all; any other failure fails t.
func Chromium(t testing.TB, args []string, url string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no headless Chromium: no chromium in PATH (Debian's chromium package)")
	}
	for attempt := 1; ; attempt++ {
		out, errOut, err := runChromium(t, bin, args, url)
		if err == nil {
			return out
		}
		if !crashed(err) || attempt == chromiumAttempts {
			t.Fatalf("chromium: %v\n%s", err, errOut)
		}
		t.Logf("chromium crashed (attempt %d of %d), starting it again: %v\n%s", attempt, chromiumAttempts, err, errOut)
	}
}

// errChromiumTimeout is returned by runChromium when Chromium outlives
// its 90 s.
var errChromiumTimeout = errors.New("chromium ran past 90 s and was killed")

// runChromium runs Chromium once, with a profile of its own.
func runChromium(t testing.TB, bin string, args []string, url string) (out, errOut []byte, err error) {
	profile, err := os.MkdirTemp("", "e2e-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveProfile(t, profile) })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--disable-dev-shm-usage", "--user-data-dir=" + profile}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind
	}
	if ctx.Err() != nil {
		err = errChromiumTimeout
	}
	return stdout.Bytes(), stderr.Bytes(), err
}

// crashed reports whether err says Chromium died of a signal (one the
// test did not send: a timeout is errChromiumTimeout).
func crashed(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	return ok && status.Signaled()
}

// RemoveProfile removes a Chromium profile: helpers killed with the group
// may still be writing to it for a moment, so the removal is retried a
// few times rather than failing the test (t.TempDir would).
func RemoveProfile(t testing.TB, profile string) {
	for i := 0; ; i++ {
		err := os.RemoveAll(profile)
		if err == nil {
			return
		}
		if i == 20 {
			t.Logf("removing Chromium's profile %s: %v", profile, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
