package pgcheckpoint_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// TestSessionsAfter guards the keyset listing a viewer's list page reads
// (issue 31, item 10): SessionsAfter lists what Sessions lists, each
// session once with its newest generation, in name order, across its
// batches of 100, and from any name on. Mutations caught: `session > $1`
// as `>=` (each batch's last session twice), the next batch not started
// from the last name (the same batch forever, or sessions lost), a full
// batch taken for the last.
func TestSessionsAfter(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var names []string
	for i := range 230 {
		name := fmt.Sprintf("s%04d", i)
		names = append(names, name)
		for gen := uint64(1); gen <= uint64(1+i%3/2); gen++ {
			if err := s.Save(ctx, checkpointtest.Checkpoint(name, gen)); err != nil {
				t.Fatal(err)
			}
		}
	}
	list := func(after string) (got []string) {
		for c, err := range s.SessionsAfter(ctx, after) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, c.Session)
		}
		return got
	}
	var all []string
	for c, err := range s.Sessions(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c.Session)
	}
	if !slices.Equal(all, names) {
		t.Fatalf("Sessions listed %d sessions, want %d", len(all), len(names))
	}
	for _, after := range []string{"", "s0000", "s0099", "s0100", "s0150", "s0199", "s0229", "t"} {
		want := names[len(names)-len(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n <= after })):]
		if got := list(after); !slices.Equal(got, want) {
			t.Errorf("SessionsAfter(%q): %d sessions from %v, want %d from %v", after, len(got), first(got), len(want), first(want))
		}
	}
	for c, err := range s.SessionsAfter(ctx, "s0049") {
		if err != nil || c.Session != "s0050" || c.Generation != uint64(1+50%3/2) {
			t.Errorf("first after s0049: %v generation %d, %v; want s0050", c.Session, c.Generation, err)
		}
		break
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
