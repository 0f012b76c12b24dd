//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockThroughSymlink: a run that reaches a plan through a symbolic
// link (to the file, or to its directory) takes the lock of the plan
// itself, so it is refused while another run holds that lock; and a run
// through a link edits the plan, leaving the link a link.
func TestLockThroughSymlink(t *testing.T) {
	path := fixture(t, "single_iteration.md")
	dir := filepath.Dir(path)
	other := t.TempDir()
	fileLink := filepath.Join(other, "plan.md")
	if err := os.Symlink(path, fileLink); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(other, "plans")
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}

	// Another run (a process of its own: the flock of another open file)
	// holds the plan's lock.
	release, err := lockPlan(planLockPath(path))
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(path)
	for _, link := range []string{fileLink, filepath.Join(dirLink, filepath.Base(path))} {
		r := runOn(t, link, "--simulate")
		if r.code != exitError || !strings.Contains(r.stderr, "another run is working on this plan") {
			t.Errorf("run through %s: exit %d\n%s%s", link, r.code, r.stdout, r.stderr)
		}
	}
	if now, _ := os.ReadFile(path); string(now) != string(orig) {
		t.Errorf("a refused run changed the plan:\n%s", now)
	}
	release()

	r := runOn(t, fileLink, "--simulate")
	if r.code != exitOK {
		t.Fatalf("run through the link: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Lstat(fileLink); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", fi, err)
	}
	if now, _ := os.ReadFile(path); string(now) == string(orig) {
		t.Errorf("the plan itself was not edited")
	}
}
