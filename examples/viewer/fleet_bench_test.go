package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
	"github.com/refine-go/refine/iterate/view"
)

// BenchmarkFleetSessionPage serves the page of one fleet session,
// "target" (stopped budget_exhausted, its stop extended), among 100
// sessions and among many (VIEW_BENCH_SESSIONS, 10,000 by default; the
// others submitted and queued), with the viewer's fleet options
// (wiring=extraof: view.ExtraOf, the session read alone) and with the
// list's extras alone (wiring=extras: every session read for one page,
// as before view.ExtraOf). Issue 31, item 10: a session's page costs the
// same however many sessions the fleet has.
func BenchmarkFleetSessionPage(b *testing.B) {
	benchFleetPages(b, "/session/target", map[string]func(*fleet.Fleet, string) []view.Option{
		"extraof": func(f *fleet.Fleet, schema string) []view.Option {
			return fleetOptions(f, options{fleetSchema: schema})
		},
		"extras": func(f *fleet.Fleet, _ string) []view.Option { return []view.Option{view.Extras(extras(f, false))} },
	})
}

// BenchmarkFleetListPage serves the first page of a fleet's list
// (page=first) and a page in the middle of it (page=middle, after half the
// sessions), among 100 sessions and among many (VIEW_BENCH_SESSIONS,
// 10,000 by default), as BenchmarkFleetSessionPage sets them up (one
// session stopped, the others queued: the list's rows are the fleet's),
// with the viewer's fleet options (wiring=extrasafter: view.ExtrasAfter,
// a page of the fleet's sessions read, fleet.Fleet.SessionsAfter) and
// with every session's extras (wiring=extras: fleet.Fleet.Sessions for
// each page, as before). Issue 31: a page of the list costs the same
// however many sessions the fleet has.
func BenchmarkFleetListPage(b *testing.B) {
	wirings := map[string]func(*fleet.Fleet, string) []view.Option{
		"extrasafter": func(f *fleet.Fleet, schema string) []view.Option {
			return fleetOptions(f, options{fleetSchema: schema})
		},
		"extras": func(f *fleet.Fleet, _ string) []view.Option {
			return []view.Option{view.Extras(extras(f, false)), view.ExtraOf(extraOf(f, false))}
		},
	}
	b.Run("page=first", func(b *testing.B) { benchFleetPages(b, "/", wirings) })
	b.Run("page=middle", func(b *testing.B) { benchFleetPages(b, "/?after=s%07d", wirings) })
}

// benchFleetPages serves path (with %07d, the name of the session half
// way through the fleet's) with each wiring's options, among 100
// sessions and among VIEW_BENCH_SESSIONS (10,000 by default): one,
// "target", stopped budget_exhausted and extended, the others queued.
func benchFleetPages(b *testing.B, path string, wirings map[string]func(*fleet.Fleet, string) []view.Option) {
	url := serverURL(b)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	var rb [6]byte
	_, _ = rand.Read(rb[:])
	schema := "viewer_fleet_bench_" + hex.EncodeToString(rb[:])
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			b.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.Poll(50*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	kind := fleet.MustRegister(f, "spend", func(context.Context, struct{}) (fleet.Loop[spent], error) {
		step := func(_ context.Context, s spent, r iterate.Round) (spent, error) {
			r.Charge(budget.Usage{Tokens: 100})
			s.Steps++
			return s, nil
		}
		return fleet.Loop[spent]{Worker: iterate.Func(step),
			Options: []iterate.Option{iterate.WithBudget(budget.Limits{Tokens: 300}), iterate.WithMaxIterations(100)}}, nil
	})
	if _, err := kind.Submit(ctx, "target", struct{}{}); err != nil {
		b.Fatal(err)
	}
	work, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Work(work) }()
	res, err := kind.Wait(ctx, "target")
	stop()
	<-done
	if res == nil || res.Status != iterate.BudgetExhausted {
		b.Fatalf("target: %v, %v", res, err)
	}
	if err := f.Extend(ctx, "target", budget.Limits{Tokens: 500}, "alice"); err != nil {
		b.Fatal(err)
	}
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("VIEW_BENCH_SESSIONS")); err == nil && v > 100 {
		n = v
	}
	have := 1
	for _, size := range []int{100, n} {
		var subs []fleet.Submission[struct{}]
		for ; have < size; have++ {
			subs = append(subs, fleet.Submission[struct{}]{Session: fmt.Sprintf("s%07d", have)})
		}
		if _, err := kind.SubmitMany(ctx, subs); err != nil {
			b.Fatal(err)
		}
		for _, t := range []string{"fleet_sessions", "river_job"} {
			if _, err := pool.Exec(ctx, `ANALYZE `+pgx.Identifier{schema, t}.Sanitize()); err != nil {
				b.Fatal(err)
			}
		}
		target := path
		if strings.Contains(path, "%") {
			target = fmt.Sprintf(path, size/2)
		}
		for _, wiring := range slices.Sorted(maps.Keys(wirings)) {
			h, err := view.New(f.Store(), wirings[wiring](f, schema)...)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("wiring=%s/sessions=%d", wiring, size), func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, "http://localhost"+target, nil)
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		}
	}
}
