//go:build unix

package checkpoint_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// TestHelperProcess is not a test: run by the lock tests as a child process
// (with helperEnv set), it takes the lock of a session and says "locked
// <token>" on stdout. Then, for each line "save <generation>" on stdin, it
// saves a checkpoint with its token and answers "ok", "fenced" or "error:
// ...". It releases the lock and exits when stdin closes.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "lock" {
		t.Skip("helper process for the lock tests")
	}
	session := os.Getenv("HELPER_SESSION")
	d := checkpoint.NewDir(os.Getenv("HELPER_DIR"))
	token, release, err := d.Lock(ctx, session)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("locked", token)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		gen, err := strconv.ParseUint(strings.TrimPrefix(in.Text(), "save "), 10, 64)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		c := checkpointtest.Checkpoint(session, gen)
		c.Token = token
		switch err := d.Save(ctx, c); {
		case err == nil:
			fmt.Println("ok")
		case errors.Is(err, checkpoint.ErrFenced):
			fmt.Println("fenced")
		default:
			fmt.Println("error:", err)
		}
	}
	release()
	os.Exit(0)
}

// holder is a child process holding a session's lock.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	token uint64
}

func startHolder(t *testing.T, dir, session string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=lock", "HELPER_DIR="+dir, "HELPER_SESSION="+session)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := h.line(t)
	token, ok := strings.CutPrefix(line, "locked ")
	if !ok {
		t.Fatalf("helper process: got %q; want \"locked <token>\"", line)
	}
	if h.token, err = strconv.ParseUint(token, 10, 64); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *holder) line(t *testing.T) string {
	t.Helper()
	line, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper process: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

// save asks the holder to save generation gen and returns its answer.
func (h *holder) save(t *testing.T, gen uint64) string {
	t.Helper()
	if _, err := fmt.Fprintf(h.stdin, "save %d\n", gen); err != nil {
		t.Fatal(err)
	}
	return h.line(t)
}

// TestDirLockAcrossProcesses covers seed 004's concurrent execution guard: a
// second run of a live session is refused with the holder's pid, a run that
// crashed (killed, no cleanup) never blocks the next one, and the next
// holder's token is above the previous one's.
func TestDirLockAcrossProcesses(t *testing.T) {
	t.Run("seed004_running_session_refuses_second_run", func(t *testing.T) {
		dir := t.TempDir()
		h := startHolder(t, dir, "build")
		_, _, err := checkpoint.NewDir(dir).Lock(ctx, "build")
		var le *checkpoint.LockedError
		if !errors.As(err, &le) {
			t.Fatalf("Lock while another process holds it: got %v, want a *LockedError", err)
		}
		want := &checkpoint.LockedError{Session: "build", Holder: "pid " + strconv.Itoa(h.cmd.Process.Pid)}
		if diff := cmp.Diff(want, le); diff != "" {
			t.Errorf("LockedError mismatch (-want +got):\n%s", diff)
		}
		// Another session is free meanwhile.
		_, release, err := checkpoint.NewDir(dir).Lock(ctx, "test")
		if err != nil {
			t.Fatalf("Lock of another session: %v", err)
		}
		release()
	})
	t.Run("seed004_crashed_run_does_not_block", func(t *testing.T) {
		dir := t.TempDir()
		h := startHolder(t, dir, "build")
		if got := h.save(t, 1); got != "ok" {
			t.Fatalf("holder's save: %s", got)
		}
		if err := h.cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
			t.Fatal(err)
		}
		h.cmd.Wait()
		token, release, err := checkpoint.NewDir(dir).Lock(ctx, "build")
		if err != nil {
			t.Fatalf("Lock after the holder was killed: %v", err)
		}
		if token != h.token+1 {
			t.Errorf("token %d after a holder with token %d, want %d", token, h.token, h.token+1)
		}
		if got, want := string(readFile(t, filepath.Join(dir, "build.lock"))), fmt.Sprintf("pid %d\ntoken %d\n", os.Getpid(), token); got != want {
			t.Errorf("lock file holds %q, want %q", got, want)
		}
		if err := release(); err != nil {
			t.Errorf("release: %v", err)
		}
	})
	t.Run("released_by_clean_exit", func(t *testing.T) {
		dir := t.TempDir()
		h := startHolder(t, dir, "build")
		h.stdin.Close()
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("helper exited with %v", err)
		}
		token, release, err := checkpoint.NewDir(dir).Lock(ctx, "build")
		if err != nil {
			t.Fatalf("Lock after the holder released it: %v", err)
		}
		if token != h.token+1 {
			t.Errorf("token %d after a holder with token %d", token, h.token)
		}
		release()
	})
}

// TestDirTwoWritersFenced is issue 9 item 3 as measured: the checkpoint
// directory is deleted under a running process, a second process locks the
// session anew, and the first process's next save is refused rather than
// forking the session; the directory is not re-created by it.
func TestDirTwoWritersFenced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	first := startHolder(t, dir, "s")
	if got := first.save(t, 1); got != "ok" {
		t.Fatalf("first holder's save: %s", got)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if got := first.save(t, 2); got != "fenced" {
		t.Errorf("first holder's save after the directory was deleted: %s, want fenced", got)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directory was re-created: %v", err)
	}
	second := startHolder(t, dir, "s")
	if got := second.save(t, 10); got != "ok" {
		t.Fatalf("second holder's save: %s", got)
	}
	if got := first.save(t, 3); got != "fenced" {
		t.Errorf("first holder's save after a second holder took the session: %s, want fenced", got)
	}
	c, err := checkpoint.NewDir(dir).Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if c.Generation != 10 || c.Token != second.token {
		t.Errorf("loaded generation %d token %d, want the second holder's generation 10 token %d", c.Generation, c.Token, second.token)
	}
}

// TestDirLockInProcess: flock belongs to the open file, so a second Lock in
// the same process fails too, naming this process.
func TestDirLockInProcess(t *testing.T) {
	dir := t.TempDir()
	a, b := checkpoint.NewDir(dir), checkpoint.NewDir(dir)
	_, release, err := a.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*checkpoint.Dir{a, b} {
		_, _, err := d.Lock(ctx, "s")
		var le *checkpoint.LockedError
		if !errors.As(err, &le) {
			t.Fatalf("second Lock in the process: got %v, want a *LockedError", err)
		}
		if diff := cmp.Diff(&checkpoint.LockedError{Session: "s", Holder: "pid " + strconv.Itoa(os.Getpid())}, le); diff != "" {
			t.Errorf("LockedError mismatch (-want +got):\n%s", diff)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	_, again, err := b.Lock(ctx, "s")
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}

// TestDirLockRefusesPlantedFiles: issue 9 item 4. A symbolic link (to a
// precious file, or dangling), a directory or a FIFO where the lock file
// should be is refused: no file outside the directory is created or
// changed, and Lock neither blocks nor follows anything.
func TestDirLockRefusesPlantedFiles(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, lock, outside string)
		want  string // in the error
	}{
		{"issue9_symlink_to_precious_file", func(t *testing.T, lock, outside string) {
			writeFile(t, outside, []byte("precious"))
			if err := os.Symlink(outside, lock); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link, not followed"},
		{"issue9_dangling_symlink", func(t *testing.T, lock, outside string) {
			if err := os.Symlink(outside, lock); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link, not followed"},
		{"issue24_hard_link_to_precious_file", func(t *testing.T, lock, outside string) {
			writeFile(t, outside, []byte("precious"))
			if err := os.Link(outside, lock); err != nil {
				t.Fatal(err)
			}
		}, "has other hard links, not written"},
		{"directory", func(t *testing.T, lock, outside string) {
			if err := os.Mkdir(lock, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "is a directory"},
		{"fifo", func(t *testing.T, lock, outside string) {
			if err := syscall.Mkfifo(lock, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "ckpt")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			outside := filepath.Join(root, "precious")
			lock := filepath.Join(dir, "s.lock")
			tc.plant(t, lock, outside)
			before, beforeErr := os.Stat(outside)

			done := make(chan error, 1)
			go func() {
				_, release, err := checkpoint.NewDir(dir).Lock(ctx, "s")
				if err == nil {
					release()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Lock blocked")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, checkpoint.ErrLocked) {
				t.Fatalf("Lock: got %v, want an error saying %q", err, tc.want)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				t.Errorf("Lock: error %v is not an *fs.PathError", err)
			}
			after, afterErr := os.Stat(outside)
			switch {
			case beforeErr != nil && afterErr == nil:
				t.Errorf("Lock created %s outside the directory", outside)
			case beforeErr == nil:
				if got := string(readFile(t, outside)); got != "precious" {
					t.Errorf("the file outside holds %q, want \"precious\"", got)
				}
				if before.Mode() != after.Mode() || before.Size() != after.Size() {
					t.Errorf("the file outside changed: %v %d, was %v %d", after.Mode(), after.Size(), before.Mode(), before.Size())
				}
			}
			// Remove leaves what is not a lock file of ours alone too.
			if err := checkpoint.NewDir(dir).Remove(ctx, "s"); err != nil {
				t.Errorf("Remove: %v", err)
			}
			if _, err := os.Lstat(lock); err != nil {
				t.Errorf("Remove deleted the planted %s: %v", tc.name, err)
			}
		})
	}
}

// TestDirGenerationFIFO: a FIFO named like a generation does not block Load,
// which reports it as a file it cannot read.
func TestDirGenerationFIFO(t *testing.T) {
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	saveGens(t, d, "s", 1)
	if err := syscall.Mkfifo(filepath.Join(dir, genFile("s", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := d.Load(ctx, "s")
	var pe *fs.PathError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Load: got %v, want an *fs.PathError for a file that is not regular", err)
	}
}

// TestDirModes: issue 9 item 7. The directory is created 0700 and every file
// 0600 (checked with umask 0, so that the modes are Dir's own).
func TestDirModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for _, first := range []string{"lock", "save"} {
		t.Run("created_by_"+first, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a", "ckpt")
			d := checkpoint.NewDir(dir)
			var tmpMode fs.FileMode
			checkpoint.SetSaveHook(d, func(stage string) error {
				if stage == "sync" {
					names, _ := filepath.Glob(filepath.Join(dir, ".s.*.tmp"))
					if len(names) == 1 {
						if fi, err := os.Stat(names[0]); err == nil {
							tmpMode = fi.Mode()
						}
					}
				}
				return nil
			})
			var release func() error
			if first == "lock" {
				var err error
				if _, release, err = d.Lock(ctx, "s"); err != nil {
					t.Fatal(err)
				}
			}
			saveGens(t, d, "s", 1)
			if first == "save" {
				var err error
				if _, release, err = d.Lock(ctx, "s"); err != nil {
					t.Fatal(err)
				}
			}
			defer release()
			// A damaged generation keeps its mode when quarantined.
			saveGens(t, d, "s", 2)
			writeFile(t, filepath.Join(dir, genFile("s", 2)), []byte("damaged"))
			load(t, d, "s")
			want := map[string]fs.FileMode{
				".":                          fs.ModeDir | 0o700,
				"..":                         fs.ModeDir | 0o700,
				"s.lock":                     0o600,
				genFile("s", 1):              0o600,
				genFile("s", 2) + ".corrupt": 0o600,
				"temporary file":             0o600,
			}
			got := map[string]fs.FileMode{"temporary file": tmpMode}
			for name := range want {
				if name == "temporary file" {
					continue
				}
				fi, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				got[name] = fi.Mode()
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("modes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDirSaveDirectorySyncError: a save whose fsync of the directory fails
// returns that error (the new name may not survive a crash), unless the
// file system cannot fsync a directory at all (EINVAL, or unsupported),
// which is no failure. Under the mutation `err != nil` of syncDir the
// error was replaced by that of the directory's Close, nil.
func TestDirSaveDirectorySyncError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error // of the directory's fsync
		fail bool
	}{
		{"eio", syscall.EIO, true},
		{"einval", syscall.EINVAL, false},
		{"unsupported", errors.ErrUnsupported, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := checkpoint.NewDir(t.TempDir())
			checkpoint.SetSync(d, func(f *os.File) error {
				if fi, err := f.Stat(); err == nil && fi.IsDir() {
					return &fs.PathError{Op: "sync", Path: f.Name(), Err: tc.err}
				}
				return f.Sync()
			})
			err := d.Save(ctx, checkpointtest.Checkpoint("s", 1))
			switch {
			case tc.fail && (!errors.Is(err, tc.err) || !strings.Contains(err.Error(), "syncing directory")):
				t.Errorf("Save: %v, want the directory's fsync error", err)
			case !tc.fail && err != nil:
				t.Errorf("Save: %v, want no error", err)
			}
		})
	}
}

// TestDirLockReadsLongLockFile: of a lock file longer than what is read of
// it (512 bytes), the token in its first part counts and what lies beyond
// does not. (The mutation `err == nil` of readSmall dropped a read that
// filled its buffer: the token was lost and Lock gave 1.)
func TestDirLockReadsLongLockFile(t *testing.T) {
	dir := t.TempDir()
	long := "token 41\n" + strings.Repeat("x", 600) + "\ntoken 99\n"
	writeFile(t, filepath.Join(dir, "s.lock"), []byte(long))
	token, release, err := checkpoint.NewDir(dir).Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if token != 42 {
		t.Errorf("Lock over a long lock file with token 41 first: token %d, want 42", token)
	}
}

// TestDirRemoveReportsFailures: Remove returns the failure to delete a file
// of the session (the mutations `err == nil` of its two checks dropped
// them): a generation's name taken by a directory with a file in it, and,
// in a directory nobody may write to, the lock file. Root deletes whatever
// the directory's mode: as root, that case runs in a child process as
// nobody.
func TestDirRemoveReportsFailures(t *testing.T) {
	t.Run("generation_not_removable", func(t *testing.T) {
		dir := t.TempDir()
		d := checkpoint.NewDir(dir)
		saveGens(t, d, "s", 1)
		blocker := filepath.Join(dir, genFile("s", 2))
		if err := os.Mkdir(blocker, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(blocker, "inside"), nil)
		err := d.Remove(ctx, "s")
		if err == nil || !strings.Contains(err.Error(), genFile("s", 2)) {
			t.Errorf("Remove: %v, want the failure to delete %s", err, genFile("s", 2))
		}
		if _, err := os.Stat(filepath.Join(dir, genFile("s", 1))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("generation 1 was not removed: %v", err)
		}
	})
	t.Run("lock_file_not_removable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			runAsNobody(t, "TestDirRemoveReportsFailuresAsNobody")
			return
		}
		removeLockFileReadOnly(t, t.TempDir())
	})
}

// TestDirRemoveReportsFailuresAsNobody is not a test: it is the child
// process, run as nobody, of TestDirRemoveReportsFailures.
func TestDirRemoveReportsFailuresAsNobody(t *testing.T) {
	dir := os.Getenv(envNobodyDir)
	if dir == "" {
		t.Skip("helper process of TestDirRemoveReportsFailures")
	}
	if os.Geteuid() == 0 {
		t.Fatal("running as root")
	}
	removeLockFileReadOnly(t, dir)
}

// removeLockFileReadOnly leaves the lock file of session s in dir, makes
// dir read-only, and expects Remove to fail to delete it, and say so.
func removeLockFileReadOnly(t *testing.T, dir string) {
	d := checkpoint.NewDir(dir)
	_, release, err := d.Lock(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	err = d.Remove(ctx, "s")
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Remove with the lock file in a read-only directory: %v, want a permission error", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.lock")); err != nil {
		t.Errorf("the lock file: %v, want it still there", err)
	}
}
