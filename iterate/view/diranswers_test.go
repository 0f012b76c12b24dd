package view

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// TestDirAnswers guards issue 31, item 13: an escalated session kept in a
// directory is answered from its page with DirAnswers: the answer is
// recorded, whole, before the POST gets its 303; a second answer to the
// same escalation, from another viewer (another handler, so not the
// handler's own memory of the first), is refused with 409 and the typed
// error, the first answer kept; two concurrent answers, one recorded; the
// host reads the answer and resumes the session with it. Mutations
// caught: the answer written over an existing one (os.WriteFile, or
// rename instead of link: the second answer replaces the first), the
// answer not recorded before the 303.
func TestDirAnswers(t *testing.T) {
	ctx := context.Background()
	dir, answers := t.TempDir(), t.TempDir()
	d := checkpoint.NewDir(dir)
	esc := func(opts ...iterate.Option) []iterate.Option {
		return append([]iterate.Option{iterate.WithCheckpointer(d), iterate.WithSession("asked"),
			iterate.WithBudget(budget.Limits{Tokens: 50000, Calls: 100}), iterate.WithMaxIterations(2),
			iterate.WithConvergence(converge.IterationLimit{Escalate: true})}, opts...)
	}
	if res, err := iterate.New(toyWorker{}, esc()...).Run(ctx, toyState{}); res == nil || res.Status != iterate.Escalated {
		t.Fatalf("premise: an escalated session: %v %v", res, err)
	}
	c, err := d.Load(ctx, "asked")
	if err != nil {
		t.Fatal(err)
	}
	viewer := func() *Handler { return newHandler(t, d, Answers(DirAnswers{Path: answers})) }
	if code, body := postAnswer(viewer(), "asked", c.Generation, "first"); code != http.StatusSeeOther {
		t.Fatalf("first answer: %d %s", code, body)
	}
	rec, err := ReadDirAnswer(answers, "asked", c.Generation)
	if err != nil || rec.Answer != "first" || rec.Generation != c.Generation {
		t.Fatalf("the answer recorded: %+v, %v", rec, err)
	}
	code, body := postAnswer(viewer(), "asked", c.Generation, "second")
	if code != http.StatusConflict || !strings.Contains(body, ErrAnswered.Error()) {
		t.Errorf("second answer from another viewer: %d %s; want 409, %q", code, body, ErrAnswered)
	}
	if rec, _ := ReadDirAnswer(answers, "asked", c.Generation); rec == nil || rec.Answer != "first" {
		t.Errorf("after a second answer the record is %+v, want the first", rec)
	}
	// Two answers at once to another escalation: one recorded.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			errs[i] = DirAnswers{Path: answers}.AnswerOnce(ctx, "other", 7, strings.Repeat("x", i+1), "")
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrAnswered):
			t.Errorf("a concurrent answer: %v, want ErrAnswered", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d concurrent answers recorded, want 1", ok)
	}
	if _, err := ReadDirAnswer(answers, "none", 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no answer: %v, want fs.ErrNotExist", err)
	}
	if err := (DirAnswers{Path: answers}).AnswerOnce(ctx, "../x", 1, "a", ""); err == nil {
		t.Error("a session name out of the directory was accepted")
	}
	// The host resumes with the answer.
	if _, err := iterate.New(toyWorker{}, esc()...).Resume(ctx, iterate.WithAnswer(rec.Answer)); err != nil && !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatal(err)
	}
	if n, _ := d.Load(ctx, "asked"); n == nil || n.Generation == c.Generation {
		t.Error("the host did not resume the session with the recorded answer")
	}
}
