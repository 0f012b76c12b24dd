package fleet_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// Rule: Submit is idempotent by name under concurrency. Two processes'
// handles submitting the same 300 new names at once, in the same order,
// get no error, and each name is submitted (true) by exactly one of them;
// eight concurrent submits of one name give one (true, nil) and seven
// (false, nil); submitting a name again with other arguments is an
// *ArgsError matching ErrArgsDiffer. (Mutations caught: the previous
// INSERT … ON CONFLICT DO NOTHING with a SELECT of the row in the same
// statement, whose snapshot misses a row a concurrent submit committed —
// "no rows in result set"; ignoring the arguments of an existing session —
// (false, nil) for other arguments.)
func TestSubmitConcurrent(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)
	const names = 300
	var kinds [2]*fleet.Kind[synthArgs, synthState]
	for i := range kinds {
		f, _ := startFleet(t, url, schema)
		kinds[i] = registerSynth(f, nil)
	}
	args := func(name string) synthArgs { return synthArgs{Name: name, Iterations: 2} }
	var got [2][names]bool
	var errs [2][]error
	var wg sync.WaitGroup
	for p := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				name := fmt.Sprintf("n-%d", i)
				ok, err := kinds[p].Submit(ctx, name, args(name))
				if err != nil {
					errs[p] = append(errs[p], fmt.Errorf("%s: %w", name, err))
				}
				got[p][i] = ok
			}
		}()
	}
	wg.Wait()
	for p := range errs {
		if len(errs[p]) > 0 {
			t.Errorf("process %d: %d of %d submits failed, the first: %v", p, len(errs[p]), names, errs[p][0])
		}
	}
	for i := range names {
		if got[0][i] == got[1][i] {
			t.Errorf("n-%d submitted by %v and %v; want exactly one true", i, got[0][i], got[1][i])
		}
	}

	// One name, eight submitters at once.
	var oks [8]bool
	var oneErrs [8]error
	start := make(chan struct{})
	for i := range oks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			oks[i], oneErrs[i] = kinds[i%2].Submit(ctx, "one", args("one"))
		}()
	}
	close(start)
	wg.Wait()
	trues := 0
	for i := range oks {
		if oneErrs[i] != nil {
			t.Errorf("submit %d of one name: %v", i, oneErrs[i])
		}
		if oks[i] {
			trues++
		}
	}
	if trues != 1 {
		t.Errorf("%d of 8 concurrent submits of one name reported true; want 1", trues)
	}

	// Other arguments under a submitted name.
	var ae *fleet.ArgsError
	_, err := kinds[0].Submit(ctx, "one", synthArgs{Name: "one", Iterations: 3})
	if !errors.Is(err, fleet.ErrArgsDiffer) || !errors.As(err, &ae) || ae.Session != "one" {
		t.Errorf("Submit with other arguments: %v; want an *ArgsError", err)
	}
	if ok, err := kinds[1].Submit(ctx, "one", args("one")); ok || err != nil {
		t.Errorf("Submit with the same arguments: %v, %v; want false, nil", ok, err)
	}
}

// Rule: SubmitMany submits many sessions in one transaction, as Submit
// would one by one: each new name true once (also from two processes at
// once, with overlapping batches), existing ones false, a name repeated in
// the batch once; all or nothing: a refused name (other arguments) fails
// the call and submits nothing; the sessions run. (Mutations caught:
// reporting true for a name inserted by the other batch — the xmax test
// dropped; submitting the valid names of a refused batch.)
func TestSubmitMany(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)
	var kinds [2]*fleet.Kind[synthArgs, synthState]
	var fleets [2]*fleet.Fleet
	for i := range kinds {
		fleets[i], _ = startFleet(t, url, schema)
		kinds[i] = registerSynth(fleets[i], nil)
	}
	batch := func(from, to int) []fleet.Submission[synthArgs] {
		var subs []fleet.Submission[synthArgs]
		for i := from; i < to; i++ {
			name := fmt.Sprintf("m-%04d", i)
			subs = append(subs, fleet.Submission[synthArgs]{Session: name, Args: synthArgs{Name: name, Iterations: 2}})
		}
		return subs
	}
	// Two processes, batches of 600 overlapping on 200.
	var got [2][]bool
	var errs [2]error
	var wg sync.WaitGroup
	for p := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[p], errs[p] = kinds[p].SubmitMany(ctx, batch(p*400, p*400+600))
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("SubmitMany: %v; %v", errs[0], errs[1])
	}
	for i := range 1000 {
		var n int
		if i < 600 && got[0][i] {
			n++
		}
		if i >= 400 && got[1][i-400] {
			n++
		}
		if n != 1 {
			t.Fatalf("m-%04d submitted %d times", i, n)
		}
	}
	list, err := fleets[0].Sessions(ctx)
	if err != nil || len(list) != 1000 {
		t.Fatalf("Sessions: %d, %v", len(list), err)
	}
	for _, s := range list {
		if s.Status != fleet.Queued || s.Job != "available" {
			t.Fatalf("session %+v", s)
		}
	}
	// Again, with a repeated name: all false.
	again, err := kinds[0].SubmitMany(ctx, append(batch(0, 3), batch(0, 1)...))
	if err != nil || len(again) != 4 || again[0] || again[1] || again[2] || again[3] {
		t.Fatalf("SubmitMany again: %v, %v", again, err)
	}
	// A refused name fails the batch; its new name is not submitted.
	bad := append(batch(1000, 1001), fleet.Submission[synthArgs]{Session: "m-0000", Args: synthArgs{Name: "m-0000", Iterations: 9}})
	if _, err := kinds[0].SubmitMany(ctx, bad); !errors.Is(err, fleet.ErrArgsDiffer) {
		t.Fatalf("SubmitMany with other arguments: %v", err)
	}
	if _, err := fleets[0].Session(ctx, "m-1000"); !errors.Is(err, fleet.ErrUnknownSession) {
		t.Fatalf("a refused batch submitted m-1000: %v", err)
	}
	// Sessions so submitted run (in a schema of their own, not behind
	// the thousand above).
	schema2 := newSchema(t, pool)
	w, _ := startFleet(t, url, schema2)
	wk := registerSynth(w, nil)
	if got, err := wk.SubmitMany(ctx, []fleet.Submission[synthArgs]{
		{Session: "run-a", Args: synthArgs{Name: "run-a", Iterations: 2}},
		{Session: "run-b", Args: synthArgs{Name: "run-b", Iterations: 3}},
	}); err != nil || !got[0] || !got[1] {
		t.Fatalf("SubmitMany: %v, %v", got, err)
	}
	work(t, w)
	for _, name := range []string{"run-a", "run-b"} {
		if res, err := wk.Wait(ctx, name); err != nil || res.Status != iterate.Converged {
			t.Fatalf("Wait %s: %v, %v", name, res, err)
		}
	}
}
