//go:build unix

package view

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// TestHolderOfDir: a running session of a directory is "live" only while a
// process holds its lock; a lock file left naming a process that is gone
// (a loop SIGKILLed: the kernel released its lock, the file still names
// it) or naming none shows the status stale, on the page, in /live (so an
// open page reloads) and in the list. Mutations caught: liveness taken from
// the status alone ("(live)" for every running session), a lock file's
// presence taken for a holder.
func TestHolderOfDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := checkpoint.NewDir(dir)
	runToy(t, d, "done", iterate.WithMaxIterations(12))
	c, err := d.Load(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	x := c.Clone()
	x.Session, x.Status, x.Generation, x.Token = "r", string(iterate.Running), 0, 0
	if err := d.Save(ctx, x); err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, ReadOnly(d))
	holding := func() string {
		t.Helper()
		_, js := get(t, h, "/session/r/live")
		var l Live
		if err := json.Unmarshal([]byte(js), &l); err != nil {
			t.Fatal(err)
		}
		return l.Holding
	}

	_, release, err := d.Lock(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, h, "/session/r")
	if !strings.Contains(body, `<span id="live" class="muted">(live)</span>`) || holding() != held {
		t.Errorf("held: page %q, /live %q", liveSpan(body), holding())
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, h, "/session/r")
	if !strings.Contains(body, "no process holds it") || holding() != unheld {
		t.Errorf("released: page %q, /live %q", liveSpan(body), holding())
	}

	// A loop killed with its lock: its lock file names its process.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true(1) to get a dead process's id:", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r.lock"), fmt.Appendf(nil, "pid %d\ntoken 9\n", dead.Process.Pid), 0o600); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, h, "/session/r")
	if !strings.Contains(body, "no process holds it: the loop stopped without saving its end") || holding() != unheld {
		t.Errorf("killed: page %q, /live %q", liveSpan(body), holding())
	}
	if strings.Contains(body, "(live)") {
		t.Error("a killed loop's page says (live)")
	}
	_, list := get(t, h, "/")
	if !strings.Contains(list, `<span class="err unheld">no process holds it (killed or crashed)</span>`) {
		t.Error("the list does not tell the killed loop's session")
	}
	if holding() == "" || strings.Count(list, "unheld") != 1 {
		t.Errorf("only the running session is told of: %d", strings.Count(list, "unheld"))
	}
}

// liveSpan returns the page's #live element.
func liveSpan(body string) string {
	i := strings.Index(body, `<span id="live"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(body[i:], "</td>")
	return body[i : i+j]
}
