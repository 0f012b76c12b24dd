package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// TestLineage: the listing and the session's page show where a fork came
// from, and which generation holds the best state.
func TestLineage(t *testing.T) {
	dir := t.TempDir()
	runToy(t, dir, "origin", iterate.WithMaxIterations(8), iterate.WithCheckpointer(checkpoint.NewDir(dir, checkpoint.KeepAll())))
	res, err := iterate.New(toy{}, iterate.WithCheckpointer(checkpoint.NewDir(dir)), iterate.WithSession("fork"),
		iterate.WithBudget(limits), iterate.WithMaxIterations(8), iterate.WithKeepBest(iterate.ByMetric("coverage"))).
		Resume(context.Background(), iterate.ForkFrom("origin", 2))
	if err != nil || res.Best == nil {
		t.Fatalf("fork: %v, best %v", err, res.Best)
	}
	out, _, code := runIn(dir)
	if code != 0 || !strings.Contains(out, "(fork of origin@2)") {
		t.Errorf("listing (exit %d) does not show the fork's origin:\n%s", code, out)
	}
	out, _, code = runIn("--json", dir)
	var es []entry
	if err := json.Unmarshal([]byte(out), &es); err != nil || code != 0 {
		t.Fatalf("--json listing: %v (exit %d)", err, code)
	}
	for _, e := range es {
		if e.Session == "fork" && (e.ForkedFrom != "origin@2" || e.BestGeneration == 0) {
			t.Errorf("--json entry of the fork: %+v", e)
		}
	}
	out, _, code = runIn(dir, "fork")
	if code != 0 || !strings.Contains(out, "Forked from  origin@2") || !strings.Contains(out, "Best state   generation") {
		t.Errorf("the fork's page (exit %d):\n%s", code, out)
	}
}
