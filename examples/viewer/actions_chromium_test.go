//go:build unix

package main

import (
	"context"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate/view"
)

// TestChromiumDirAnswer guards issue 31, item 13, in a browser: an
// operator types an answer to a directory's escalated session
// (--answer-dir) and submits it; the answer is recorded (view.ReadDirAnswer)
// and the page comes back; a second answer from another viewer's tab opened
// before it shows the operator the typed refusal (409, "answered already"), the
// first answer kept. Mutations caught: the answer form not posting (no
// record), a second answer recorded over the first (no refusal shown).
func TestChromiumDirAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, adir := t.TempDir(), t.TempDir()
	d := checkpoint.NewDir(dir)
	runLoop(t, d, "asked", true)
	c, err := d.Load(ctx, "asked")
	if err != nil {
		t.Fatal(err)
	}
	// Two viewers, so that the refusal comes from the record, not from
	// the first viewer's memory.
	base, other := server(t, "--dir", dir, "--answer-dir", adir), server(t, "--dir", dir, "--answer-dir", adir)
	b := startBrowser(t)
	first, second := b.newTab(ctx, t), b.newTab(ctx, t)
	for p, url := range map[*tab]string{first: base, second: other} {
		p.navigate(url + "/session/asked")
		p.waitFor("the answer form", `document.querySelector('form#answer button[type=submit]')`)
	}
	first.typeInto("#answer-text", "go on <please>")
	first.click(`form#answer button[type=submit]`)
	first.waitFor("the session's page after the answer", `location.pathname.endsWith('/session/asked') && document.readyState === 'complete'`)
	for {
		rec, err := view.ReadDirAnswer(adir, "asked", c.Generation)
		if err == nil {
			if rec.Answer != "go on <please>" {
				t.Fatalf("recorded %q", rec.Answer)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the answer was not recorded: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	second.typeInto("#answer-text", "no")
	second.click(`form#answer button[type=submit]`)
	second.waitFor("the refusal", `document.body && document.body.innerText.includes('answered already')`)
	second.screenshot("dir-answer-refused.png")
	if rec, _ := view.ReadDirAnswer(adir, "asked", c.Generation); rec == nil || rec.Answer != "go on <please>" {
		t.Errorf("after the second answer: %+v", rec)
	}
}
