package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstart runs the README's quick start and checks that it converges,
// then that a resume of the finished session reports the same result.
func TestQuickstart(t *testing.T) {
	dir := t.TempDir()
	out := capture(t, func() int { return run(dir, 4, false, false, 0) })
	for _, want := range []string{
		"Starting session: quickstart (max 4 iterations)",
		"Iteration 1/4 completed in",
		"Status: converged after 2 iterations",
		"questions 3/3 answered",
		"middleware validates the token on every request",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	again := capture(t, func() int { return run(dir, 4, true, false, 0) })
	if !strings.Contains(again, "Status: converged after 2 iterations") {
		t.Errorf("resume of the finished session:\n%s", again)
	}
}

func capture(t *testing.T, fn func() int) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, r)
		done <- b.String()
	}()
	code := fn()
	os.Stdout = stdout
	w.Close()
	out := <-done
	if code != 0 {
		t.Fatalf("exit code %d:\n%s", code, out)
	}
	return out
}

// TestArguments: a stray argument is refused with its reason, not ignored.
func TestArguments(t *testing.T) {
	var stderr strings.Builder
	if code := cli([]string{"stray"}, &stderr); code != 2 || !strings.Contains(stderr.String(), `unexpected argument "stray": quickstart takes flags only`) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	stderr.Reset()
	if code := cli([]string{"-max-iterations", "x"}, &stderr); code != 2 || !strings.Contains(stderr.String(), "invalid value") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	// A negative limit is a usage error too (exit 2, not 1), refused
	// before anything runs.
	stderr.Reset()
	if code := cli([]string{"-max-iterations", "-1", "-state", t.TempDir()}, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "-max-iterations must be 0 (unlimited) or more, got -1") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	stderr.Reset()
	if code := cli([]string{"-resume", "-fresh"}, &stderr); code != 2 || !strings.Contains(stderr.String(), "give one of them") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestDefaultStatePerUser: the default checkpoint directory is the user's
// own (in the user's cache directory), not one name under the shared
// temporary directory that the first user to run quickstart owns and a
// second one is refused.
func TestDefaultStatePerUser(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("TMPDIR", t.TempDir())
	if got, want := defaultState(), filepath.Join(cache, "refine-quickstart"); got != want {
		t.Errorf("defaultState() = %s, want %s", got, want)
	}
}

// TestVersion (issue 20, item 10): --version prints the build, as the other
// programs' do, instead of "flag provided but not defined".
func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version"} {
		t.Run(arg, func(t *testing.T) {
			var stderr strings.Builder
			out := capture(t, func() int { return cli([]string{arg}, &stderr) })
			if !strings.HasPrefix(out, "quickstart ") || stderr.Len() > 0 {
				t.Errorf("stdout %q, stderr %q; want the version line on stdout", out, stderr.String())
			}
		})
	}
}
