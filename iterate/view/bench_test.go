package view

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// The benchmarks serve a page of the list and a session's page of a
// checkpoint directory of 100 sessions and of many (VIEW_BENCH_SESSIONS,
// 10,000 by default so that CI's one run of each stays quick; BENCHMARKS.md
// gives the figures at 100,000). One session, "target", is a toy loop's
// (12 iterations, its generations kept as Dir keeps them); the others are
// envelopes of a few hundred bytes written straight as generation files.

// benchDir returns a directory of n sessions.
func benchDir(b *testing.B, n int) *checkpoint.Dir {
	b.Helper()
	dir := b.TempDir()
	d := checkpoint.NewDir(dir)
	res, err := iterate.New(toyWorker{}, iterate.WithCheckpointer(d), iterate.WithSession("target"),
		iterate.WithMaxIterations(12)).Run(context.Background(), toyState{})
	if res == nil {
		b.Fatal(err)
	}
	for i := range n - 1 {
		c := &checkpoint.Checkpoint{Session: fmt.Sprintf("s%07d", i), Generation: 1, Status: "converged",
			Iteration: 5, Reason: "done", Question: ""}
		data, err := checkpoint.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.%020d.ckpt", c.Session, 1)), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	// An earlier viewer process, whose first list page listed the
	// directory and wrote the snapshot of its sessions' names (the
	// handler's Dir reads it on its first page).
	for range checkpoint.NewDir(dir).SessionsAfter(context.Background(), "") {
		break
	}
	return d
}

func benchSizes() []int {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("VIEW_BENCH_SESSIONS")); err == nil && v > 100 {
		n = v
	}
	return []int{100, n}
}

func benchPage(b *testing.B, path string) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			h, err := New(ReadOnly(benchDir(b, n)))
			if err != nil {
				b.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "http://localhost"+path, nil)
			// The first page a handler serves is timed apart: a
			// checkpoint.Dir reads the snapshot of its sessions' names
			// on its first list page (SessionsAfter), and follows its
			// sessions journal after.
			runtime.GC() // the fixture's garbage is not the page's
			start := time.Now()
			first := httptest.NewRecorder()
			h.ServeHTTP(first, req)
			if first.Code != http.StatusOK {
				b.Fatalf("%s: %d", path, first.Code)
			}
			firstMS := float64(time.Since(start).Microseconds()) / 1000
			size := 0
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d", path, rec.Code)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/page")
			b.ReportMetric(firstMS, "first-ms")
		})
	}
}

// BenchmarkListPage serves the first page of the list.
func BenchmarkListPage(b *testing.B) { benchPage(b, "/") }

// BenchmarkSessionPage serves the page of the session "target".
func BenchmarkSessionPage(b *testing.B) { benchPage(b, "/session/target") }
