//go:build unix

package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Fatalf ends the goroutine and is recorded,
// so a test can watch Chromium's failures without failing itself.
type recorder struct {
	testing.TB
	fatal string
	logs  []string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// TestChromiumRetriesACrash runs a fake chromium that dies of SIGSEGV on
// its first `crashes` starts, or exits 1: a crash is retried up to three
// starts in all, an exit status is not. Mutations caught: "no retry" (the
// first case fails), "retry every failure" (the exit-1 case starts twice),
// "retry forever" (the last case starts four times).
func TestChromiumRetriesACrash(t *testing.T) {
	for _, tc := range []struct {
		name       string
		script     string
		wantStarts int
		wantFatal  bool
	}{
		{"one crash, then a page", `[ "$n" -ge 2 ] || kill -SEGV $$; echo page`, 2, false},
		{"exit status", `exit 1`, 1, true},
		{"crashes every time", `kill -SEGV $$`, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			starts := filepath.Join(t.TempDir(), "starts")
			script := "#!/bin/sh\necho x >> " + starts + "\nn=$(wc -l < " + starts + ")\n" + tc.script + "\n"
			if err := os.WriteFile(filepath.Join(bin, "chromium"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			r := &recorder{TB: t}
			var out []byte
			done := make(chan struct{})
			go func() {
				defer close(done)
				out = Chromium(r, nil, "about:blank")
			}()
			<-done
			data, _ := os.ReadFile(starts)
			if n := strings.Count(string(data), "x"); n != tc.wantStarts {
				t.Errorf("chromium started %d times, want %d", n, tc.wantStarts)
			}
			if (r.fatal != "") != tc.wantFatal {
				t.Errorf("fatal %q, want a failure: %v", r.fatal, tc.wantFatal)
			}
			if !tc.wantFatal && strings.TrimSpace(string(out)) != "page" {
				t.Errorf("output %q, want the page", out)
			}
		})
	}
}
