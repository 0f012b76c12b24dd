package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unmakeable returns a directory path that cannot be created, even by root:
// its parent is a regular file. It stands for a HOME that does not exist
// under a directory the user cannot write (HOME=/nonexistent as nobody).
func unmakeable(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(file, "home")
}

// TestDefaultStateWithoutHome: without --state, an account whose cache
// directory cannot be made keeps its sessions in refine-research-UID in the
// temporary directory, says so, and --resume finds them there.
func TestDefaultStateWithoutHome(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", unmakeable(t))
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("TMPDIR", tmp)
	want := filepath.Join(tmp, fmt.Sprintf("refine-research-%d", os.Getuid()))
	if got := defaultStateDir(); got != want {
		t.Errorf("defaultStateDir() = %s, want %s", got, want)
	}

	env := []string{"HOME=" + os.Getenv("HOME"), "XDG_CACHE_HOME=", "TMPDIR=" + tmp}
	args := []string{"--root", filepath.Join("testdata", "1_single", "src"), "--questions", filepath.Join("testdata", "1_single", "questions.txt")}
	r := runBinary(t, env, args...)
	if r.code != exitOK || !strings.Contains(r.stdout, "(sessions kept in "+want+")") {
		t.Errorf("exit %d, want 0 and where the sessions are kept:\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// A resume of the finished session finds it there and prints its report.
	if r := runBinary(t, env, append(args, "--resume")...); r.code != exitOK {
		t.Errorf("--resume: exit %d, want 0:\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
