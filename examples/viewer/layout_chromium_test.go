//go:build unix

package main

import (
	"context"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
)

// TestChromiumLayout: at a 1400 px wide window the session page does not
// overflow and the timeline's last column (Summary) is there or scrolls in
// its box; at a phone's width the page is laid out for it (viewport meta)
// and nothing overflows it (tables scroll, charts shrink). Mutations
// caught: no viewport meta (laid out 980 px wide on a 390 px screen), no
// narrow-screen styles (the charts' 420 px push the page to 429 px). Not
// caught here: the timeline outside its scrolling box, as this loop's
// timeline fits 1400 px.
func TestChromiumLayout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	runLoop(t, checkpoint.NewDir(dir), "done", false)
	base := server(t, "--dir", dir)
	page := startBrowser(t).newTab(ctx, t)
	for _, vp := range []struct {
		w, h   int
		mobile bool
		shot   string
	}{{1400, 900, false, "layout-1400.png"}, {390, 844, true, "layout-phone.png"}} {
		page.do("Emulation.setDeviceMetricsOverride", map[string]any{"width": vp.w, "height": vp.h, "deviceScaleFactor": 1, "mobile": vp.mobile}, nil)
		page.navigate(base + "/session/done")
		page.waitFor("the timeline", `document.getElementById('timeline')`)
		var m struct {
			Inner, Scroll int
			Summary       bool
		}
		page.eval(`(function(){const t=document.getElementById('timeline'), box=t.parentElement;
			const last=t.querySelector('thead th:last-child');
			return {Inner: window.innerWidth, Scroll: document.documentElement.scrollWidth,
				Summary: last.textContent==='Summary' && (box.scrollWidth<=box.clientWidth+1 || getComputedStyle(box).overflowX==='auto')}})()`, &m)
		if m.Inner != vp.w {
			t.Errorf("%d px: the page is laid out %d px wide (no viewport meta?)", vp.w, m.Inner)
		}
		if m.Scroll > m.Inner+1 {
			t.Errorf("%d px: the page overflows to %d px", vp.w, m.Scroll)
		}
		if !m.Summary {
			t.Errorf("%d px: the timeline's Summary column is cut off", vp.w)
		}
		page.screenshot(vp.shot)
	}
}
