//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/refine-go/refine/examples/internal/e2etest"
)

// A headless Chromium driven through the DevTools protocol over a pipe
// (--remote-debugging-pipe: it reads commands from its file descriptor 3
// and writes replies and events to 4, each a JSON object ended by a NUL
// byte), so that a test can type into a page and click its buttons as a
// user does, with nothing beyond the standard library.

// browser is a running headless Chromium.
type browser struct {
	cmd  *exec.Cmd
	in   *os.File // commands, Chromium's fd 3
	out  *os.File // replies and events, Chromium's fd 4
	read chan struct{}

	mu      sync.Mutex
	next    int
	pending map[int]chan cdpReply
	err     error // why the replies ended
}

// cdpReply is the reply to a command.
type cdpReply struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startBrowser starts a headless Chromium for the test (skipping it
// without one), ended with its process group when the test ends.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no headless Chromium: no chromium in PATH (Debian's chromium package)")
	}
	profile, err := os.MkdirTemp("", "viewer-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--disable-dev-shm-usage", "--remote-debugging-pipe", "--window-size=1280,1600",
		"--hide-scrollbars", "--user-data-dir="+profile, "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, resW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var errOut syncBuffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	resW.Close()
	b := &browser{cmd: cmd, in: cmdW, out: resR, read: make(chan struct{}), pending: map[int]chan cdpReply{}}
	go b.replies()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		b.in.Close()
		b.out.Close() // ends replies, should a helper still hold the pipe
		<-b.read
		e2etest.RemoveProfile(t, profile)
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", errOut.String())
		}
	})
	return b
}

// replies reads Chromium's messages and hands each reply to its command;
// events are dropped.
func (b *browser) replies() {
	defer close(b.read)
	r := bufio.NewReader(b.out)
	var err error
	for {
		var msg []byte
		msg, err = r.ReadBytes(0)
		if err != nil {
			break
		}
		var rep cdpReply
		if json.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &rep) != nil || rep.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.pending[rep.ID]
		delete(b.pending, rep.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
		err = errors.New("chromium closed its pipe")
	}
	b.mu.Lock()
	b.err = err
	for id, ch := range b.pending {
		close(ch)
		delete(b.pending, id)
	}
	b.mu.Unlock()
}

// call sends method with params in the session (the browser's when "")
// and returns the reply's result in result (when not nil).
func (b *browser) call(ctx context.Context, session, method string, params, result any) error {
	ch := make(chan cdpReply, 1)
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return b.err
	}
	b.next++
	id := b.next
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case rep, ok := <-ch:
		switch {
		case !ok:
			b.mu.Lock()
			defer b.mu.Unlock()
			return fmt.Errorf("%s: %w", method, b.err)
		case rep.Error != nil:
			return fmt.Errorf("%s: %s (%d)", method, rep.Error.Message, rep.Error.Code)
		case result != nil:
			return json.Unmarshal(rep.Result, result)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// tab is a page of the browser.
type tab struct {
	t       *testing.T
	b       *browser
	session string
	ctx     context.Context
}

// newTab opens a blank page, its commands bounded by ctx.
func (b *browser) newTab(ctx context.Context, t *testing.T) *tab {
	t.Helper()
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatal(err)
	}
	return &tab{t: t, b: b, session: att.SessionID, ctx: ctx}
}

// do sends a command to the page.
func (p *tab) do(method string, params, result any) {
	p.t.Helper()
	if err := p.b.call(p.ctx, p.session, method, params, result); err != nil {
		p.t.Fatal(err)
	}
}

// eval evaluates expr in the page and stores its value (JSON) in v.
func (p *tab) eval(expr string, v any) {
	p.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	p.do("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.Exception != nil {
		p.t.Fatalf("evaluating %s: %s %s", expr, res.Exception.Text, res.Exception.Exception.Description)
	}
	if v != nil {
		if err := json.Unmarshal(res.Result.Value, v); err != nil {
			p.t.Fatalf("evaluating %s: %s: %v", expr, res.Result.Value, err)
		}
	}
}

// truth evaluates a boolean expression.
func (p *tab) truth(expr string) bool {
	p.t.Helper()
	var ok bool
	p.eval("!!("+expr+")", &ok)
	return ok
}

// waitFor polls the page, every 50 milliseconds, until expr is true, and
// fails the test when it is not by the deadline of p's context.
func (p *tab) waitFor(what, expr string) {
	p.t.Helper()
	for !p.truth(expr) {
		select {
		case <-p.ctx.Done():
			var text string
			p.eval("document.body ? document.body.innerText : ''", &text)
			p.t.Fatalf("waiting for %s (%s): %v; the page says:\n%s", what, expr, p.ctx.Err(), text)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// navigate loads url and waits until its document is complete.
func (p *tab) navigate(url string) {
	p.t.Helper()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	p.do("Page.navigate", map[string]any{"url": url}, &nav)
	if nav.ErrorText != "" {
		p.t.Fatalf("navigating to %s: %s", url, nav.ErrorText)
	}
	data, _ := json.Marshal(url)
	p.waitFor("the page "+url, "location.href === "+string(data)+" && document.readyState === 'complete'")
}

// click clicks the middle of the element that selector finds, with the
// mouse, as a user would.
func (p *tab) click(selector string) {
	p.t.Helper()
	sel, _ := json.Marshal(selector)
	var at struct{ X, Y float64 }
	p.eval(`(function(){const e=document.querySelector(`+string(sel)+`); e.scrollIntoView({block:"center"});
		const r=e.getBoundingClientRect(); return {X:r.left+r.width/2, Y:r.top+r.height/2}})()`, &at)
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		ev := map[string]any{"type": typ, "x": at.X, "y": at.Y}
		if typ != "mouseMoved" {
			ev["button"], ev["clickCount"] = "left", 1
		}
		p.do("Input.dispatchMouseEvent", ev, nil)
	}
}

// typeInto focuses the element that selector finds and types text into it.
func (p *tab) typeInto(selector, text string) {
	p.t.Helper()
	sel, _ := json.Marshal(selector)
	p.eval(`document.querySelector(`+string(sel)+`).focus()`, nil)
	p.do("Input.insertText", map[string]any{"text": text}, nil)
}

// screenshot writes a PNG of the page to name in the screenshots directory.
func (p *tab) screenshot(name string) {
	p.t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	p.do("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 5000 {
		p.t.Fatalf("screenshot %s: %d bytes, %v", name, len(png), err)
	}
	if err := os.WriteFile(filepath.Join(shotDir(p.t), name), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}
