package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPatchDirs: the candidate patches are the subdirectories, in name
// order; files and hidden directories are ignored.
func TestPatchDirs(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"10", "02", "01", ".hidden"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "README"), "patches")
	got, err := patchDirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"01", "02", "10"}, got); diff != "" {
		t.Errorf("patchDirs (-want +got):\n%s", diff)
	}
	if _, err := patchDirs(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: err = %v, want fs.ErrNotExist", err)
	}
}

// TestApplyOverlay: files overwrite or create, nested directories too;
// .fixloop-delete removes paths and is not copied; a path escaping the
// working copy is refused.
func TestApplyOverlay(t *testing.T) {
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "a.go"), "old a")
	writeFile(t, filepath.Join(work, "gone.go"), "gone")
	writeFile(t, filepath.Join(work, "keep.go"), "keep")

	patch := t.TempDir()
	writeFile(t, filepath.Join(patch, "a.go"), "new a")
	writeFile(t, filepath.Join(patch, "sub", "b.go"), "new b")
	writeFile(t, filepath.Join(patch, deleteList), "# comment\n\ngone.go\n")

	changed, err := applyOverlay(patch, work)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a.go", "gone.go", "sub/b.go"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	snap, err := snapshot(work)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for p := range snap {
		files = append(files, p)
	}
	if diff := cmp.Diff([]string{"a.go", "keep.go", "sub/b.go"}, files, cmpSorted); diff != "" {
		t.Errorf("working copy files (-want +got):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(work, "a.go")); got != "new a" {
		t.Errorf("a.go = %q", got)
	}

	bad := t.TempDir()
	writeFile(t, filepath.Join(bad, deleteList), "../outside\n")
	if _, err := applyOverlay(bad, work); err == nil {
		t.Error("a delete path outside the working copy was accepted")
	}
}

// TestCopyTreeSkipsStateAndGit: the working copy gets the package without
// .git or a checkpoint directory.
func TestCopyTreeSkipsStateAndGit(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(src, "go.mod"), "module m\n")
	writeFile(t, filepath.Join(src, "pkg", "x.go"), "package pkg\n")
	writeFile(t, filepath.Join(src, ".git", "HEAD"), "ref")
	writeFile(t, filepath.Join(src, stateDir, "s.ckpt"), "x")
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	before, _ := snapshot(src)
	after, err := snapshot(dst)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("copy (-src +dst):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dst, ".git")); err == nil {
		t.Error(".git was copied")
	}
	if diff := cmp.Diff([]string{"pkg/x.go"}, changedFiles(map[string][32]byte{"go.mod": after["go.mod"]}, after)); diff != "" {
		t.Errorf("changedFiles (-want +got):\n%s", diff)
	}
}
