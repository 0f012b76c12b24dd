package iteratetest_test

// This file is a downstream module's test of its own loop, as README's
// "Testing your loop" shows it: the module's Worker (scout), then one test
// that uses the three parts of the kit — a cassette, the crash kit and a
// decision table — in under 30 lines.

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

// notes is the loop's state: the answers found so far.
type notes struct {
	Answers map[string]string `json:"answers,omitempty"`
}

// questions are what the loop must answer.
var questions = []string{"Which database?", "Which queue?", "Which cache?"}

// scout is the module's Worker: each task asks a model one open question.
// The model is a stand-in that counts its calls; its first try at the
// cache times out, and it prints the API key it used, a secret.
type scout struct{ calls atomic.Int64 }

func (*scout) Assess(_ context.Context, s notes) (gap.Assessment, error) {
	return assessNotes(s.Answers), nil
}

// assessNotes is where notes with these answers stand.
func assessNotes(answers map[string]string) gap.Assessment {
	a := gap.Assessment{Findings: []gap.Finding{{ID: "notes", Confidence: 0.9}}}
	for _, q := range questions {
		a.Questions = append(a.Questions, gap.Question{Text: q, Critical: true, Answered: answers[q] != ""})
		if answers[q] != "" {
			a.Coverage += 1 / float64(len(questions))
		}
	}
	return a
}

func (w *scout) Work(_ context.Context, _ notes, t iterate.Task) (iterate.Outcome[notes], error) {
	w.calls.Add(1)
	q := t.Gap().Target
	used := budget.Usage{Tokens: int64(100 * len(q)), Calls: 1}
	if t.Gap().Kind != gap.UnansweredQuestion {
		return iterate.Outcome[notes]{Usage: used, Output: "nothing to ask"}, nil
	}
	if q == "Which cache?" && t.Iteration == 1 {
		return iterate.Outcome[notes]{Usage: used}, errors.New("model: timed out")
	}
	answer := "Postgres"
	if q != "Which database?" {
		answer = strings.TrimSuffix(strings.TrimPrefix(q, "Which "), "?") + ": none yet"
	}
	return iterate.Outcome[notes]{Part: notes{Answers: map[string]string{q: answer}}, Usage: used,
		Output: "[key sk-live-4f9a] " + answer}, nil
}

func (*scout) Integrate(_ context.Context, s notes, outs []iterate.Outcome[notes]) (notes, error) {
	next := notes{Answers: maps.Clone(s.Answers)}
	for _, o := range outs {
		if o.Err == nil {
			next.Answers = merge(next.Answers, o.Part.Answers)
		}
	}
	return next, nil
}

func merge(a, b map[string]string) map[string]string {
	if a == nil {
		a = map[string]string{}
	}
	maps.Copy(a, b)
	return a
}

// redact is the module's scrub: it takes its API keys out of outputs.
func redact(s string) string { return strings.ReplaceAll(s, "sk-live-4f9a", "sk-REDACTED") }

// TestScoutLoop is the module's test of its loop: replayed from the
// cassette (record it again with REFINE_RECORD=1), crashed at every save,
// and its policy checked on a decision table.
func TestScoutLoop(t *testing.T) {
	w := iteratetest.Cassette(t, "testdata/scout.cassette.json", &scout{}, iteratetest.Scrub(redact))
	loop := func(opts ...iterate.Option) iterate.Engine[notes] {
		return iterate.New(w, append([]iterate.Option{iterate.WithMaxIterations(4),
			iterate.WithCheckpointer(new(checkpoint.Memory), iterate.Journal)}, opts...)...)
	}

	res, err := loop().Run(context.Background(), notes{}) // no model call, no cost
	if err != nil || res.Status != iterate.EarlyExit || res.Iterations != 2 || len(res.State.Answers) != 3 {
		t.Fatalf("Run: %v, %s after %d iterations with %v", err, res.Status, res.Iterations, res.State.Answers)
	}

	iteratetest.Crash(t, loop, notes{}) // killed at every save, resumed: ends the same

	rows, err := iteratetest.Table([]iteratetest.Row{{Assessment: assessNotes(nil)},
		{Assessment: assessNotes(map[string]string{"Which database?": "a", "Which queue?": "b", "Which cache?": "c"})}})
	if err != nil || rows[0].Plan.Action != iterate.Expand || len(rows[0].Plan.Tasks) != 3 ||
		rows[1].Decision.Verdict != converge.EarlyExit {
		t.Errorf("table: %v, %+v", err, rows)
	}
}
