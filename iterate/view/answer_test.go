package view

import (
	"context"
	"errors"
	"github.com/refine-go/refine/budget"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// postAnswer posts answer to session's form for generation gen.
func postAnswer(h *Handler, session string, gen uint64, answer string, hdr ...string) (int, string) {
	form := url.Values{"token": {h.token(session, gen)}, "answer": {answer}, "generation": {strconv.FormatUint(gen, 10)}}
	req := httptest.NewRequest(http.MethodPost, "http://localhost/session/"+session+"/answer", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// TestSecondAnswerRefused: a second answer to the same escalation is
// refused (409), not passed on to replace the first, whether posted again
// from the same page or concurrently; a form of an earlier escalation (the
// session moved on) is refused too. Mutation caught: every valid answer
// passed to Answer (303 for both, the second replacing the first).
func TestSecondAnswerRefused(t *testing.T) {
	a := &answers{}
	h := newHandler(t, testStore(t), Answers(a))
	gen, _ := testGen(t, h, "asked")
	codes := make(chan int, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			code, _ := postAnswer(h, "asked", gen, "answer "+strconv.Itoa(i))
			codes <- code
		})
	}
	wg.Wait()
	close(codes)
	n := map[int]int{}
	for c := range codes {
		n[c]++
	}
	if n[http.StatusSeeOther] != 1 || n[http.StatusConflict] != 7 || len(a.got) != 1 {
		t.Errorf("8 answers to one escalation: statuses %v, answers passed on %v; want one", n, a.got)
	}
	if code, body := postAnswer(h, "asked", gen-1, "stale"); code != http.StatusConflict || !strings.Contains(body, "moved on") {
		t.Errorf("an answer to an earlier generation: %d %s", code, body)
	}
	// The host says it is answered (another viewer took an answer).
	other := newHandler(t, h.store, Answers(a), Extras(func(context.Context) (map[string]Extra, error) {
		return map[string]Extra{"asked": {Answered: true}}, nil
	}))
	if code, _ := postAnswer(other, "asked", gen, "late"); code != http.StatusConflict || len(a.got) != 1 {
		t.Errorf("an answer to an answered session: %d, answers %v", code, a.got)
	}
}

// onceAnswers is an AnswerOnce that records who answered.
type onceAnswers struct {
	mu  sync.Mutex
	got []string
}

func (o *onceAnswers) Answer(context.Context, string, string) error {
	return errors.New("Answer called where AnswerOnce is implemented")
}

func (o *onceAnswers) AnswerOnce(_ context.Context, session string, gen uint64, answer, by string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.got) > 0 {
		return ErrAnswered
	}
	o.got = append(o.got, session+"@"+strconv.FormatUint(gen, 10)+" by "+by+": "+answer)
	return nil
}

// TestAnswerOnceUsed: an Answerer with AnswerOnce is given the escalation's
// generation and who answered (AnswerBy).
func TestAnswerOnceUsed(t *testing.T) {
	o := &onceAnswers{}
	h := newHandler(t, testStore(t), Answers(o), AnswerBy(func(r *http.Request) string { return r.Header.Get("X-Forwarded-User") }))
	gen, _ := testGen(t, h, "asked")
	if code, body := postAnswer(h, "asked", gen, "yes", "X-Forwarded-User", "ada"); code != http.StatusSeeOther {
		t.Fatalf("%d %s", code, body)
	}
	if want := "asked@" + strconv.FormatUint(gen, 10) + " by ada: yes"; len(o.got) != 1 || o.got[0] != want {
		t.Errorf("AnswerOnce got %v, want %q", o.got, want)
	}
}

// TestQuestionsAnswered: after the session resumed with the answer and
// went on, its page still shows the question, with the accepted answer,
// who and when, as the host records them. Mutation caught: the page shows
// only the open escalation of the newest checkpoint (neither question nor
// answer once resumed).
func TestQuestionsAnswered(t *testing.T) {
	ctx := context.Background()
	m := &checkpoint.Memory{KeepAll: true}
	res := runToy(t, m, "asked", iterate.WithMaxIterations(2), iterate.WithConvergence(converge.IterationLimit{Escalate: true}))
	if res.Status != iterate.Escalated {
		t.Fatalf("%s", res.Status)
	}
	esc, _ := m.Load(ctx, "asked")
	at := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	rec := AnswerRecord{Generation: esc.Generation, Question: esc.Question, Answer: "go <on>", By: "ada", At: at}
	if _, err := iterate.New(toyWorker{}, iterate.WithCheckpointer(m), iterate.WithSession("asked"),
		iterate.WithBudget(budget.Limits{Tokens: 50000, Calls: 100}), iterate.WithMaxIterations(2),
		iterate.WithConvergence(converge.IterationLimit{Escalate: true})).Resume(ctx, iterate.WithAnswer(rec.Answer)); err != nil && !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatal(err)
	}
	c, _ := m.Load(ctx, "asked")
	if c.Generation == esc.Generation {
		t.Fatal("premise: the session went on after the answer")
	}
	h := newHandler(t, m, Extras(func(context.Context) (map[string]Extra, error) {
		return map[string]Extra{"asked": {Answers: []AnswerRecord{rec}}}, nil
	}))
	_, body := get(t, h, "/session/asked")
	row := `<tr data-generation="` + strconv.FormatUint(esc.Generation, 10) + `">`
	i := strings.Index(body, row)
	if i < 0 {
		t.Fatalf("no row of the escalation of generation %d", esc.Generation)
	}
	line := body[i : i+strings.Index(body[i:], "</tr>")]
	for _, want := range []string{template.HTMLEscapeString(esc.Question), "go &lt;on&gt;", "<td>ada</td>", "2026-11-28 03:00:00 UTC"} {
		if !strings.Contains(line, want) {
			t.Errorf("the escalation's row lacks %q: %s", want, line)
		}
	}
}
