package checkpoint_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

var benchSizes = []struct {
	name string
	size int
}{
	{"size=1KiB", 1 << 10},
	{"size=1MiB", 1 << 20},
}

func benchCheckpoint(size int) *checkpoint.Checkpoint {
	c := checkpointtest.Checkpoint("bench", 1)
	c.State = make([]byte, size)
	for i := range c.State {
		c.State[i] = byte(i * 31)
	}
	return c
}

// BenchmarkDirSave measures one Dir.Save of a checkpoint whose state has the
// given size: encode, write, fsync, publish, fsync the directory, prune.
func BenchmarkDirSave(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) {
			d := checkpoint.NewDir(b.TempDir())
			c := benchCheckpoint(bs.size)
			data, err := checkpoint.Marshal(c)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Save(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("size=100MiB", benchDirSaveLarge)
}

// BenchmarkDirSaveLarge is BenchmarkDirSave/size=100MiB (a sub-benchmark
// of BenchmarkDirSave): one save of a 100 MiB state, with the peak of the
// heap above what was live before the save (peak-extra-B, sampled every
// millisecond) beside the allocations.
func benchDirSaveLarge(b *testing.B) {
	const size = 100 << 20
	d := checkpoint.NewDir(b.TempDir())
	c := benchCheckpoint(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		stop := samplePeakHeap(&peak)
		if err := d.Save(ctx, c); err != nil {
			b.Fatal(err)
		}
		stop()
	}
	b.ReportMetric(float64(peak), "peak-extra-B")
}

// samplePeakHeap samples the heap in use every millisecond until stop is
// called, and raises *peak to the largest growth seen over the heap in use
// when it started.
func samplePeakHeap(peak *uint64) (stop func()) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	done := make(chan struct{})
	finished := make(chan struct{})
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > base && ms.HeapAlloc-base > *peak {
			*peak = ms.HeapAlloc - base
		}
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				sample()
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() { close(done); <-finished }
}

// BenchmarkRawFloor is the physical floor of BenchmarkDirSave: the same
// bytes written to a temporary file, fsynced, closed, renamed into place,
// and the directory fsynced, with nothing else.
func BenchmarkRawFloor(b *testing.B) {
	for _, bs := range append(benchSizes[:len(benchSizes):len(benchSizes)], struct {
		name string
		size int
	}{"size=100MiB", 100 << 20}) {
		b.Run(bs.name, func(b *testing.B) {
			dir := b.TempDir()
			data, err := checkpoint.Marshal(benchCheckpoint(bs.size))
			if err != nil {
				b.Fatal(err)
			}
			final := filepath.Join(dir, "bench.ckpt")
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := os.CreateTemp(dir, ".bench.*.tmp")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(data); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				if err := os.Rename(f.Name(), final); err != nil {
					b.Fatal(err)
				}
				df, err := os.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				if err := df.Sync(); err != nil {
					b.Fatal(err)
				}
				df.Close()
			}
		})
	}
}

// BenchmarkMarshal and BenchmarkUnmarshal measure the format alone.
func BenchmarkMarshal(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) {
			c := benchCheckpoint(bs.size)
			b.SetBytes(int64(bs.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := checkpoint.Marshal(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) {
			data, err := checkpoint.Marshal(benchCheckpoint(bs.size))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(bs.size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := checkpoint.Unmarshal(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMemorySave(b *testing.B) {
	var m checkpoint.Memory
	c := benchCheckpoint(1 << 10)
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Save(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}
