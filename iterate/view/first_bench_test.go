package view

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
)

// BenchmarkFirstListPage measures a viewer process's first list page
// (issue 31, item 11) as an interleaved A/B: directories of 100 sessions
// and of many (VIEW_BENCH_SESSIONS, as benchPage's), each with the
// snapshot an earlier viewer wrote; each round serves the first page of a
// new handler over a new checkpoint.Dir on one, then on the other,
// alternately first, so that the machine's load falls alike on both. It
// reports the median of each and their ratio (ratio: many/100), and the
// first page's allocations at each, which do not depend on the load.
func BenchmarkFirstListPage(b *testing.B) {
	sizes := benchSizes()
	dirs := make([]string, len(sizes))
	for i, n := range sizes {
		dirs[i] = benchDir(b, n).Path()
	}
	first := func(dir string) (time.Duration, uint64) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		h, err := New(ReadOnly(checkpoint.NewDir(dir)))
		if err != nil {
			b.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/", nil))
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d", rec.Code)
		}
		return took, after.Mallocs - before.Mallocs
	}
	times := make([][]float64, len(sizes))
	allocs := make([]uint64, len(sizes))
	round := 0
	for b.Loop() {
		for k := range sizes {
			i := (k + round) % len(sizes)
			took, n := first(dirs[i])
			times[i] = append(times[i], float64(took.Microseconds())/1000)
			allocs[i] = n
		}
		round++
	}
	med := make([]float64, len(sizes))
	for i, n := range sizes {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
		b.ReportMetric(med[i], fmt.Sprintf("ms@%d", n))
		b.ReportMetric(float64(allocs[i]), fmt.Sprintf("allocs@%d", n))
	}
	b.ReportMetric(med[len(med)-1]/med[0], "ratio")
}
