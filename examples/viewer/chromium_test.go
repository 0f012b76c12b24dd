//go:build unix

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/examples/internal/e2etest"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/view"
)

// The end-to-end tests drive the pages in a headless Chromium (Debian's
// chromium package), and skip when there is none. Screenshots go to the
// directory named by VIEWER_SCREENSHOTS (kept), else to a temporary one.

// chromium runs a headless Chromium with args and url and returns its
// output (e2etest.Chromium: its own process group, a fresh profile, a
// crash at start retried).
func chromium(t *testing.T, args []string, url string) []byte {
	t.Helper()
	return e2etest.Chromium(t, args, url)
}

// shotDir is where screenshots are written.
func shotDir(t *testing.T) string {
	if d := os.Getenv("VIEWER_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// screenshot writes a screenshot of url to dir/name and checks it is a
// PNG of a plausible size.
func screenshot(t *testing.T, dir, name, url string) {
	t.Helper()
	path := filepath.Join(dir, name)
	chromium(t, []string{"--screenshot=" + path, "--window-size=1280,1600", "--hide-scrollbars"}, url)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Size() < 5000 || fi.Size() > 20<<20 {
		t.Fatalf("%s: mode %v, %d bytes", path, fi.Mode(), fi.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG", path)
	}
}

// maybeScreenshot writes a screenshot of url to name in the screenshots
// directory when there is a Chromium, and does nothing otherwise.
func maybeScreenshot(t *testing.T, name, url string) {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err == nil {
		screenshot(t, shotDir(t), name, url)
	}
}

// markup is a question that would run a script were it not escaped.
const markup = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`

func TestChromiumPages(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no headless Chromium: no chromium in PATH (Debian's chromium package)")
	}
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	runLoop(t, d, "done", false)
	runLoop(t, d, "asked", true)
	c, err := d.Load(context.Background(), "asked")
	if err != nil {
		t.Fatal(err)
	}
	c.Session, c.Question, c.Generation, c.Token = "markup", markup, 0, 0
	if err := d.Save(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	base := server(t, "--dir", dir)
	shots := shotDir(t)

	dom := string(chromium(t, []string{"--dump-dom"}, base+"/session/markup"))
	if strings.Contains(dom, "pwned</title>") || strings.Contains(dom, `<img src="x"`) {
		t.Errorf("the question ran as markup:\n%s", dom)
	}
	if !strings.Contains(dom, `&lt;script&gt;document.title="pwned"&lt;/script&gt;`) {
		t.Errorf("the question is not shown as text:\n%s", dom)
	}
	dom = string(chromium(t, []string{"--dump-dom"}, base+"/"))
	if !regexp.MustCompile(`3 of 3 sessions`).MatchString(dom) || strings.Contains(dom, `<img src="x"`) {
		t.Errorf("listing:\n%s", dom)
	}
	screenshot(t, shots, "listing.png", base+"/")
	screenshot(t, shots, "session-converged.png", base+"/session/done")
	screenshot(t, shots, "session-escalated.png", base+"/session/markup")
}

// saveOnPoll is a store that saves a new generation of a session the first
// time the page of that session polls, as a running loop would.
type saveOnPoll struct {
	*checkpoint.Memory
	once sync.Once
	next *checkpoint.Checkpoint
}

func TestChromiumLive(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no headless Chromium: no chromium in PATH (Debian's chromium package)")
	}
	m := new(checkpoint.Memory)
	runLoop(t, m, "run", false)
	ctx := context.Background()
	c, err := m.Load(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	next := c.Clone()
	next.Generation, next.Token = 0, 0
	c.Status, c.Generation, c.Token, c.Reason = string(iterate.Running), 0, 0, "running"
	if err := m.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	s := &saveOnPoll{Memory: m, next: next}
	h, err := view.New(s, view.Poll(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	polled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/live") {
			s.once.Do(func() {
				if err := m.Save(r.Context(), s.next); err != nil {
					t.Error(err)
				}
				close(polled)
			})
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dom := string(chromium(t, []string{"--dump-dom", "--virtual-time-budget=5000"}, srv.URL+"/session/run"))
	select {
	case <-polled:
	default:
		t.Fatal("the page of a running session never polled")
	}
	if !strings.Contains(dom, `<span class="status s-converged">converged</span>`) || strings.Contains(dom, "(live)") {
		t.Errorf("the page did not follow the new generation:\n%s", dom)
	}
}

// TestChromiumRemoved: the page of a running session whose store entry is
// removed stops following it and says so (its /live answers 404), rather
// than showing it running forever. Mutation caught: the page's script
// ignoring a 404 from /live.
func TestChromiumRemoved(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no headless Chromium: no chromium in PATH (Debian's chromium package)")
	}
	m := new(checkpoint.Memory)
	runLoop(t, m, "run", false)
	ctx := context.Background()
	c, err := m.Load(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	c.Status, c.Generation, c.Token, c.Reason = string(iterate.Running), 0, 0, "running"
	if err := m.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	h, err := view.New(m, view.Poll(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	polls := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/live") {
			once.Do(func() {
				if err := m.Remove(r.Context(), "run"); err != nil {
					t.Error(err)
				}
			})
			mu.Lock()
			polls++
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dom := string(chromium(t, []string{"--dump-dom", "--virtual-time-budget=5000"}, srv.URL+"/session/run"))
	if !strings.Contains(dom, `<span id="live" class="err">(removed from the store: no longer followed)</span>`) {
		t.Errorf("the page of a removed session:\n%s", dom)
	}
	mu.Lock()
	defer mu.Unlock()
	if polls != 1 {
		t.Errorf("%d polls after the session was removed, want none after the first", polls-1)
	}
}
