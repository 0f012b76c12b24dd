package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// TestQuickstart runs the README's quick start and checks that it converges,
// then that a resume of the finished session reports the same result.
func TestQuickstart(t *testing.T) {
	dir := t.TempDir()
	out := capture(t, func() int { return run(dir, 4, false, 0) })
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
	again := capture(t, func() int { return run(dir, 4, true, 0) })
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
