package view

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// The tests of this file check figures a page shows against the library's
// own values (Result, iterate.Inspect): each names the rule it holds and the
// mutation of the viewer it catches.

// peakWorker's state counts its iterations; its assessments' Score grows
// with them while its "quality" peaks at iteration 2.
type peakWorker struct{}

func (peakWorker) Assess(_ context.Context, n int) (gap.Assessment, error) {
	q := 10 - 3*(n-2)*(n-2)
	return gap.Assessment{Score: float64(n), Scores: map[string]float64{"quality": float64(q)},
		Missing: []string{"more"}}, nil
}

func (peakWorker) Work(context.Context, int, iterate.Task) (iterate.Outcome[int], error) {
	return iterate.Outcome[int]{}, nil
}

func (peakWorker) Integrate(_ context.Context, n int, _ []iterate.Outcome[int]) (int, error) {
	return n + 1, nil
}

// TestBestIsKeepBest: the best iteration shown is the engine's kept best,
// Result.Best.Iteration, by the loop's scorer. Mutation caught: taking it
// from History.BestIteration (the assessments' Score), which says 5.
func TestBestIsKeepBest(t *testing.T) {
	m := new(checkpoint.Memory)
	res, err := iterate.New(peakWorker{}, iterate.WithCheckpointer(m), iterate.WithSession("peak"),
		iterate.WithMaxIterations(5), iterate.WithKeepBest(iterate.ByMetric("quality"))).Run(context.Background(), 0)
	if res == nil || res.Best == nil {
		t.Fatalf("run: %v", err)
	}
	if res.Best.Iteration != 2 {
		t.Fatalf("the loop's best is iteration %d, want 2 (the test's premise)", res.Best.Iteration)
	}
	_, body := get(t, newHandler(t, m), "/session/peak")
	got := regexp.MustCompile(`<td id="best">(\d+)`).FindStringSubmatch(body)
	if got == nil || got[1] != strconv.Itoa(res.Best.Iteration) {
		t.Errorf("best iteration shown %v, want %d", got, res.Best.Iteration)
	}
	stars := regexp.MustCompile(`<tr data-iteration="(\d+)" class="best"`).FindAllStringSubmatch(body, -1)
	if len(stars) != 1 || stars[0][1] != strconv.Itoa(res.Best.Iteration) {
		t.Errorf("timeline marks %v as best, want only %d", stars, res.Best.Iteration)
	}
	if want := "(by metric quality)"; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(body) {
		t.Errorf("the page does not name the scorer %q", want)
	}

	// Without WithKeepBest there is no best to show.
	if res, _ := iterate.New(peakWorker{}, iterate.WithCheckpointer(m), iterate.WithSession("plain"),
		iterate.WithMaxIterations(3)).Run(context.Background(), 0); res == nil {
		t.Fatal("plain run")
	}
	_, body = get(t, newHandler(t, m), "/session/plain")
	if regexp.MustCompile(`Best iteration|class="best"`).MatchString(body) {
		t.Error("a loop without WithKeepBest shows a best iteration")
	}
	_ = fmt.Sprint
}
