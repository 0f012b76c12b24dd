package checkpoint_test

import (
	"os"
	"path/filepath"
	"testing"

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

// benchDirSaveLarge is BenchmarkDirSave/size=100MiB: one save of a 100 MiB
// state. Its memory figure is B/op: what a save allocates bounds the heap
// it adds at its peak (the state is written from the caller's slice, never
// copied). Sampling the heap instead would stop the world every sample and
// slow the save it measures.
func benchDirSaveLarge(b *testing.B) {
	const size = 100 << 20
	d := checkpoint.NewDir(b.TempDir())
	c := benchCheckpoint(size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Save(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
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
