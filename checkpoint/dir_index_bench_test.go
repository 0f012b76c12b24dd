package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// BenchmarkDirSessionRead measures what a viewer's session page reads of a
// Dir (issue 31, item 10): Generations of one session, "target" (12
// generations saved, Keep 3), and LoadGeneration of its newest, with a
// long-lived Dir, in a directory of N sessions (the others a generation
// file and an empty marker each, written directly). The cost must not grow
// with N; listings/op counts the directory's listings. Each size runs
// "index" and "listing" (a Dir that reads no index, as before indexes) on
// the same directory. N is 100 and 10,000;
// DIR_BENCH_SESSIONS adds a size (100,000 takes a few seconds to set up).
func BenchmarkDirSessionRead(b *testing.B) {
	for _, n := range dirBenchSizes() {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			data, err := checkpoint.Marshal(checkpointtest.Checkpoint("x", 1))
			if err != nil {
				b.Fatal(err)
			}
			for i := range n - 1 {
				s := fmt.Sprintf("s%07d", i)
				writeFileB(b, filepath.Join(dir, genFile(s, 1)), data)
				writeFileB(b, filepath.Join(dir, s+".session"), nil)
			}
			w := checkpoint.NewDir(dir)
			for range 12 {
				if err := w.Save(ctx, checkpointtest.Checkpoint("target", 0)); err != nil {
					b.Fatal(err)
				}
			}
			for _, mode := range []string{"index", "listing"} {
				b.Run(mode, func(b *testing.B) {
					d := checkpoint.NewDir(dir)
					if mode == "listing" {
						checkpoint.SetNoIndex(d) // as before indexes
					}
					var lists atomic.Int64
					checkpoint.SetOnList(d, func() { lists.Add(1) })
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						gens, err := d.Generations(ctx, "target")
						if err != nil || len(gens) != checkpoint.DefaultKeep {
							b.Fatalf("Generations: %d, %v", len(gens), err)
						}
						if _, err := d.LoadGeneration(ctx, "target", gens[len(gens)-1].Generation); err != nil {
							b.Fatal(err)
						}
						i++
					}
					b.ReportMetric(float64(lists.Load())/float64(i), "listings/op")
				})
			}
		})
	}
}

// BenchmarkDirListPage measures a page of a viewer's list of a Dir (issue
// 31, item 10): the 100 sessions SessionsAfter lists after a name in the
// middle (from the first at 100 sessions), with a long-lived Dir (its first call, which lists the
// directory, made before the timing), in a directory of N sessions (a
// generation file and an empty marker each, written directly). "journal"
// is the Dir as it is, "listing" one that reads no index or journal, as
// before. Sizes as BenchmarkDirSessionRead's.
func BenchmarkDirListPage(b *testing.B) {
	for _, n := range dirBenchSizes() {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			dir := writeSessions(b, n)
			after := "" // the first page, at 100
			if n >= 200 {
				after = fmt.Sprintf("s%07d", n/2-50)
			}
			for _, mode := range []string{"journal", "listing"} {
				b.Run(mode, func(b *testing.B) {
					d := checkpoint.NewDir(dir)
					if mode == "listing" {
						checkpoint.SetNoIndex(d)
					}
					page := func() {
						rows := 0
						for c, err := range d.SessionsAfter(ctx, after) {
							if err != nil || c.Generation != 1 {
								b.Fatalf("%v, %v", c, err)
							}
							if rows++; rows == 100 {
								break
							}
						}
						if rows != 100 {
							b.Fatalf("%d rows", rows)
						}
					}
					page() // the Dir's first call
					var lists atomic.Int64
					checkpoint.SetOnList(d, func() { lists.Add(1) })
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						page()
						i++
					}
					b.ReportMetric(float64(lists.Load())/float64(i), "listings/op")
				})
			}
		})
	}
}

// BenchmarkDirFirstPage measures a viewer process's first page of its list
// of a Dir (issue 31, item 11): a new Dir's first SessionsAfter, 100
// sessions from the middle (from the first at 100 sessions), in a
// directory of N sessions as BenchmarkDirListPage's, whose snapshot an
// earlier Dir wrote. "snapshot" reads it; "listing" is a Dir without it
// (the snapshot removed before each page, and written again by it), as
// before. listings/op counts the directory's listings. Sizes as
// BenchmarkDirSessionRead's.
func BenchmarkDirFirstPage(b *testing.B) {
	for _, n := range dirBenchSizes() {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			dir := writeSessions(b, n)
			// A session created by a Dir: the journal has a line.
			if err := checkpoint.NewDir(dir).Save(ctx, checkpointtest.Checkpoint("t", 1)); err != nil {
				b.Fatal(err)
			}
			after := "" // the first page, at 100
			if n >= 200 {
				after = fmt.Sprintf("s%07d", n/2-50)
			}
			page := func(d *checkpoint.Dir) {
				rows := 0
				for c, err := range d.SessionsAfter(ctx, after) {
					if err != nil || c.Generation != 1 {
						b.Fatalf("%v, %v", c, err)
					}
					if rows++; rows == 100 {
						break
					}
				}
				if rows != 100 {
					b.Fatalf("%d rows", rows)
				}
			}
			page(checkpoint.NewDir(dir)) // an earlier viewer: writes the snapshot
			for _, mode := range []string{"snapshot", "listing"} {
				b.Run(mode, func(b *testing.B) {
					var lists atomic.Int64
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						if mode == "listing" {
							b.StopTimer()
							if err := os.Remove(filepath.Join(dir, ".sessions.index")); err != nil {
								b.Fatal(err)
							}
							b.StartTimer()
						}
						d := checkpoint.NewDir(dir)
						checkpoint.SetOnList(d, func() { lists.Add(1) })
						page(d)
						i++
					}
					b.ReportMetric(float64(lists.Load())/float64(i), "listings/op")
				})
			}
		})
	}
}

// TestDirFirstPageProbe is not a test: with REFINE_FIRST_PAGE_DIR set to
// a directory, it fills it with REFINE_FIRST_PAGE_N sessions (as
// BenchmarkDirFirstPage's, the snapshot written) unless it did, else
// serves one first page of 100 rows from the middle with a new Dir
// (none with REFINE_FIRST_PAGE_SKIP set), so that what one first page
// costs in system calls can be counted by running it under strace -c -f,
// less a run that skips the page (BENCHMARKS.md, issue 31).
func TestDirFirstPageProbe(t *testing.T) {
	dir := os.Getenv("REFINE_FIRST_PAGE_DIR")
	if dir == "" {
		t.Skip("REFINE_FIRST_PAGE_DIR not set")
	}
	_, err := os.Lstat(filepath.Join(dir, "t.session"))
	n, _ := strconv.Atoi(os.Getenv("REFINE_FIRST_PAGE_N"))
	after := ""
	if n >= 200 {
		after = fmt.Sprintf("s%07d", n/2-50)
	}
	if err != nil { // not filled
		for i := range n {
			s := fmt.Sprintf("s%07d", i)
			data, err := checkpoint.Marshal(checkpointtest.Checkpoint(s, 1))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, genFile(s, 1)), data)
			writeFile(t, filepath.Join(dir, s+".session"), nil)
		}
		saveGens(t, checkpoint.NewDir(dir), "t", 1)
		pageOf(t, checkpoint.NewDir(dir), "")
		return
	}
	if os.Getenv("REFINE_FIRST_PAGE_SKIP") != "" {
		return
	}
	rows := 0
	for _, err := range checkpoint.NewDir(dir).SessionsAfter(ctx, after) {
		if err != nil {
			t.Fatal(err)
		}
		if rows++; rows == 100 {
			break
		}
	}
}

// dirBenchSizes returns the directory sizes the benchmarks run at: 100 and
// 10,000 sessions, and DIR_BENCH_SESSIONS if set.
func dirBenchSizes() []int {
	sizes := []int{100, 10000}
	if n, err := strconv.Atoi(os.Getenv("DIR_BENCH_SESSIONS")); err == nil && n > 0 {
		sizes = append(sizes, n)
	}
	return sizes
}

// writeSessions returns a new directory of n sessions, s0000000 on, each
// a generation file and an empty marker, written directly.
func writeSessions(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		s := fmt.Sprintf("s%07d", i)
		data, err := checkpoint.Marshal(checkpointtest.Checkpoint(s, 1))
		if err != nil {
			b.Fatal(err)
		}
		writeFileB(b, filepath.Join(dir, genFile(s, 1)), data)
		writeFileB(b, filepath.Join(dir, s+".session"), nil)
	}
	return dir
}
