//go:build unix

package checkpoint_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// envNobodyDir is the directory, owned by nobody, in which a test run by
// runAsNobody works.
const envNobodyDir = "REFINE_NOBODY_DIR"

// nobody is the user and group runAsNobody runs a test as.
const nobody = 65534

// runAsNobody runs test of this test binary in a child process as nobody,
// with env and $REFINE_NOBODY_DIR set to an empty directory nobody owns, and
// fails t if the child's test fails or does not run. The binary is copied
// where nobody can run it (go test builds into a private directory). The
// caller must be root; t is skipped only if the system refuses to switch
// users.
func runAsNobody(t *testing.T, test string, env ...string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "checkpoint-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	work := filepath.Join(tmp, "work")
	bin := filepath.Join(tmp, "checkpoint.test")
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := copyExecutable(exe, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Dir = work
	cmd.Env = append(append(os.Environ(), env...), envNobodyDir+"="+work, "TMPDIR="+work)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("cannot run a process as nobody here: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Errorf("%s as nobody: %v\n%s", test, err, out)
	}
}

// copyExecutable copies the file at from to a new file at to, mode 0755.
func copyExecutable(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
