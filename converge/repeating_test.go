package converge_test

import (
	"errors"
	"testing"

	"github.com/refine-go/refine/converge"
)

// repeatHistory builds a history whose records after the initial one
// (scored 0.5) did the given actions and scored the given scores.
func repeatHistory(actions [][]string, scores []float64) *converge.History {
	h := &converge.History{}
	h.Recent = append(h.Recent, converge.Record{Score: 0.5})
	for i := range actions {
		h.Iteration++
		r := converge.Record{Iteration: h.Iteration, Score: scores[i]}
		r.Actions = actions[i]
		h.Recent = append(h.Recent, r)
	}
	return h
}

// TestRepeatingStopsThrashing guards the rule "stop as stuck when the same
// actions repeat After iterations in a row while nothing improves", with
// the actions named. Mutations caught: comparing fewer iterations than
// After, ignoring improvement, or stopping on iterations that reported no
// actions.
func TestRepeatingStopsThrashing(t *testing.T) {
	same := []string{"edit main.go", "run go test ./..."}
	other := []string{"edit util.go"}
	for _, tc := range []struct {
		name    string
		actions [][]string
		scores  []float64
		stop    bool
	}{
		{"three alike, flat", [][]string{same, same, same}, []float64{0.5, 0.5, 0.5}, true},
		{"three alike, worse", [][]string{same, same, same}, []float64{0.5, 0.4, 0.3}, true},
		{"two alike", [][]string{other, same, same}, []float64{0.5, 0.5, 0.5}, false},
		{"three alike, improving", [][]string{same, same, same}, []float64{0.5, 0.5, 0.6}, false},
		{"no actions", [][]string{nil, nil, nil}, []float64{0.5, 0.5, 0.5}, false},
		{"other before", [][]string{other, same, same, same}, []float64{0.5, 0.5, 0.5, 0.5}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := converge.Repeating{}.Decide(repeatHistory(tc.actions, tc.scores))
			if d.Stop() != tc.stop {
				t.Fatalf("Decide = %+v, want stop %v", d, tc.stop)
			}
			if tc.stop && (d.Verdict != converge.Stuck ||
				d.Reason != "stuck: the same actions for 3 iterations without improvement: edit main.go, run go test ./...") {
				t.Errorf("decision %s %q", d.Verdict, d.Reason)
			}
		})
	}
	if err := (converge.Repeating{After: -1}).Validate(); !errors.Is(err, converge.ErrInvalidPolicy) {
		t.Errorf("After -1: %v", err)
	}
	if err := converge.ValidateWindow(converge.Repeating{After: 4}, 4); !errors.Is(err, converge.ErrInvalidPolicy) {
		t.Errorf("After 4 in a window of 4: %v", err)
	}
}
