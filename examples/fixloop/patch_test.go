package main

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
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

// TestParseDeleteList: comments, blank lines and spaces are skipped and
// paths cleaned; a path outside the working copy, the copy itself or its
// checkpoint directory refuses the whole list.
func TestParseDeleteList(t *testing.T) {
	tests := []struct {
		name, list string
		want       []string
		err        string
	}{
		{"comments_blanks_spaces", "# files\n\nold.go\n  sub/dir/gone_test.go  \n# end\n", []string{"old.go", "sub/dir/gone_test.go"}, ""},
		{"cleaned", "./a/../b.go\r\nc//d.go", []string{"b.go", "c/d.go"}, ""},
		{"escaping", "ok.go\n../outside\n", nil, `path "../outside" is not inside the working copy`},
		{"absolute", "/etc/passwd\n", nil, "is not inside the working copy"},
		{"the_working_copy", "a.go\nsub/..\n", nil, `path "sub/.." would remove the working copy or its checkpoints`},
		{"dot", ".\n", nil, "would remove the working copy"},
		{"checkpoints", stateDir + "/fixloop.ckpt\n", nil, "would remove the working copy or its checkpoints"},
		{"empty", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDeleteList(strings.NewReader(tt.list))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseDeleteList (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseDeleteList checks the patch parser's safety on any list: every
// path it accepts is clean, local, neither the working copy nor inside its
// checkpoint directory, and removing it stays inside the working copy; a
// refused list returns no path. The seeds are the lists in
// testdata/deletelists.
func FuzzParseDeleteList(f *testing.F) {
	seeds, err := filepath.Glob("testdata/deletelists/*")
	if err != nil {
		f.Fatal(err)
	}
	if len(seeds) == 0 {
		f.Fatal("no seed in testdata/deletelists")
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	work := filepath.FromSlash("/work/copy")
	f.Fuzz(func(t *testing.T, list string) {
		paths, err := parseDeleteList(strings.NewReader(list))
		if err != nil {
			if paths != nil {
				t.Errorf("error %v with paths %q", err, paths)
			}
			return
		}
		for _, p := range paths {
			switch first, _, _ := strings.Cut(p, "/"); {
			case p != path.Clean(p):
				t.Errorf("path %q is not clean", p)
			case !filepath.IsLocal(filepath.FromSlash(p)):
				t.Errorf("path %q is not local", p)
			case p == "." || first == stateDir:
				t.Errorf("path %q is the working copy or its checkpoints", p)
			}
			rel, err := filepath.Rel(work, filepath.Join(work, filepath.FromSlash(p)))
			if err != nil || !filepath.IsLocal(rel) {
				t.Errorf("removing %q reaches %q outside the working copy", p, rel)
			}
		}
	})
}
