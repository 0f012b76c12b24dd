package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTreeDiff: the diff an escalation includes (seed 002's
// escalation_includes_diff): files changed, added and removed, each hunk
// without context, the state directory left out, cut at its bound.
func TestTreeDiff(t *testing.T) {
	src, work := t.TempDir(), t.TempDir()
	write := func(dir, name, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(src, "go.mod", "module x\n")
	write(work, "go.mod", "module x\n")
	write(src, "claims.go", "package x\n\nfunc A() int { return 1 }\n\nfunc B() {}\n")
	write(work, "claims.go", "package x\n\nfunc A() int { return 2 }\n\nfunc B() {}\nfunc C() {}\n")
	write(src, "old.go", "package x\n")
	write(work, "sub/new.go", "package sub")
	write(work, stateDir+"/state.json", "{}")
	got, err := treeDiff(src, work, maxDiff)
	if err != nil {
		t.Fatal(err)
	}
	want := `--- a/claims.go
+++ b/claims.go
@@ -3 +3 @@
-func A() int { return 1 }
+func A() int { return 2 }
@@ -5,0 +6 @@
+func C() {}
--- a/old.go
+++ /dev/null
@@ -1 +0,0 @@
-package x
--- /dev/null
+++ b/sub/new.go
@@ -0,0 +1 @@
+package sub
\ No newline at end of file
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("treeDiff (-want +got):\n%s", diff)
	}
	if same, _ := treeDiff(src, src, maxDiff); same != "" {
		t.Errorf("treeDiff of a tree with itself = %q, want empty", same)
	}
	cut, _ := treeDiff(src, work, 60)
	if !strings.HasSuffix(cut, "@@ -3 +3 @@\n... (diff cut at 44 bytes)\n") {
		t.Errorf("cut diff = %q", cut)
	}
}
