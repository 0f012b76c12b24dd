package fleet_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

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
