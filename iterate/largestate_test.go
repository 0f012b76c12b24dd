package iterate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// largeState is the state of the large-state benchmarks: 100 MiB of bytes,
// which the JSON codec encodes as a base64 string of 133 MiB.
const largeState = 100 << 20

func newLargeState() []byte {
	s := make([]byte, largeState)
	for i := range s {
		s[i] = byte(i*31 + i>>9)
	}
	return s
}

// blobState is a large state that is not a []byte: the JSON codec encodes
// it with a json.Encoder.
type blobState struct{ Blob []byte }

// BenchmarkLargeState measures saving a 100 MiB state through the engine,
// and what that is compared with, so that the ratios can be computed from
// one run:
//
//   - engine=bytes: a Func loop of one iteration with a Dir store and a
//     []byte state, which saves twice (after the iteration and at the
//     stop). ns/save is the run's time per save, peak-extra-B the peak of
//     the process's memory above what it held before the run (the state
//     itself and the rest of the process).
//   - engine=struct: the same with the bytes in a struct field, which the
//     JSON codec encodes through a json.Encoder.
//   - encode=codec: the JSON codec's Encode of the []byte to io.Discard,
//     what engine=bytes encodes with; encode=encoder: a json.Encoder's
//     Encode of the struct, what engine=struct encodes with;
//     encode=marshal: json.Marshal of the []byte, what the engine encoded
//     with before it streamed.
//   - floor: the encoded bytes written to a temporary file, fsynced, renamed
//     into place and the directory fsynced, with nothing else.
//
// encoded-B is the size of the state's encoding (the JSON string).
//
// Every operation starts from a clean heap: a GC and the freed memory
// returned to the operating system before it (outside the timer), so that
// one operation's garbage is not the next one's floor.
func BenchmarkLargeState(b *testing.B) {
	state := newLargeState()
	encoded, err := json.Marshal(state)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("engine=bytes", func(b *testing.B) { benchEngine(b, state, len(encoded)) })
	b.Run("engine=struct", func(b *testing.B) { benchEngine(b, blobState{state}, len(encoded)+len(`{"Blob":}`)) })
	codec := iterate.JSON.(iterate.StreamCodec)
	b.Run("encode=codec", func(b *testing.B) {
		measure(b, len(encoded), func(int) {
			if err := codec.Encode(io.Discard, state); err != nil {
				b.Fatal(err)
			}
		}, nil)
	})
	b.Run("encode=encoder", func(b *testing.B) {
		measure(b, len(encoded)+len(`{"Blob":}`), func(int) {
			if err := json.NewEncoder(io.Discard).Encode(blobState{state}); err != nil {
				b.Fatal(err)
			}
		}, nil)
	})
	b.Run("encode=marshal", func(b *testing.B) {
		measure(b, len(encoded), func(int) {
			if _, err := json.Marshal(state); err != nil {
				b.Fatal(err)
			}
		}, nil)
	})
	b.Run("floor", func(b *testing.B) {
		dir := b.TempDir()
		final := filepath.Join(dir, "large.ckpt")
		measure(b, len(encoded), func(int) {
			if err := rawWrite(dir, final, encoded); err != nil {
				b.Fatal(err)
			}
		}, nil)
	})
}

// benchEngine runs a loop of one iteration over state with a Dir store,
// each operation in a new directory.
func benchEngine[S any](b *testing.B, state S, encoded int) {
	root := b.TempDir()
	saves := 0
	measure(b, encoded, func(i int) {
		eng := iterate.New(iterate.Func(func(_ context.Context, s S, _ iterate.Round) (S, error) { return s, nil }),
			iterate.WithMaxIterations(1),
			iterate.WithSession("large"),
			iterate.WithCheckpointer(checkpoint.NewDir(filepath.Join(root, strconv.Itoa(i))), iterate.Strict),
			iterate.WithObserver(func(e iterate.Event) {
				if cs, ok := e.(iterate.CheckpointSaved); ok && cs.Err == nil {
					saves++
				}
			}))
		if _, err := eng.Run(context.Background(), state); err != nil {
			b.Fatal(err)
		}
	}, func() {
		os.RemoveAll(root)
		os.MkdirAll(root, 0o700)
	})
	if saves > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(saves), "ns/save")
	}
}

// rawWrite writes data as a new file final, atomically, as a store would.
func rawWrite(dir, final string, data []byte) error {
	f, err := os.CreateTemp(dir, ".large.*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), final)
	}
	if err != nil {
		return err
	}
	df, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer df.Close()
	return df.Sync()
}

// measure runs op b.N times, each from a clean heap, and reports the
// encoded size and the highest peak of extra memory of an operation.
// cleanup, if set, runs after each operation, outside the timer.
//
// The peak is the kernel's high-water mark of the process's resident memory
// (VmHWM in /proc/self/status, reset by writing 5 to /proc/self/clear_refs)
// above the resident memory when the operation starts. It is exact, with no
// sampling that could miss a short peak or stop the world, and it counts
// what the operating system sees: live data, garbage the collector has not
// yet freed, and the runtime's own overhead. Before each operation a GC and
// debug.FreeOSMemory return the freed heap to the kernel, so the baseline
// is the live heap. Where the high-water mark cannot be reset (not Linux, or
// clear_refs not writable), the peak is sampled every 200µs from
// runtime/metrics as the memory mapped by the runtime and not released,
// which is its own estimate of the resident memory.
func measure(b *testing.B, encoded int, op func(i int), cleanup func()) {
	b.Helper()
	var peak int64
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		m := startPeak()
		b.StartTimer()
		op(i)
		b.StopTimer()
		peak = max(peak, m.stop())
		if cleanup != nil {
			cleanup()
		}
	}
	b.ReportMetric(float64(encoded), "encoded-B")
	b.ReportMetric(float64(peak), "peak-extra-B")
}

// peakMeter measures the peak memory of one operation; see measure.
type peakMeter struct {
	base int64
	hwm  bool // the kernel's high-water mark is used
	done chan struct{}
	wg   sync.WaitGroup
	max  int64
}

func startPeak() *peakMeter {
	runtime.GC()
	debug.FreeOSMemory()
	m := &peakMeter{}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err == nil {
		if rss, ok := procStatus("VmRSS:"); ok {
			m.base, m.hwm = rss, true
			return m
		}
	}
	m.base = runtimeResident()
	m.max = m.base
	m.done = make(chan struct{})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-m.done:
				return
			case <-t.C:
				m.max = max(m.max, runtimeResident())
			}
		}
	}()
	return m
}

// stop returns the peak above the baseline.
func (m *peakMeter) stop() int64 {
	if m.hwm {
		hwm, _ := procStatus("VmHWM:")
		return max(hwm-m.base, 0)
	}
	close(m.done)
	m.wg.Wait()
	return max(m.runtimeMax()-m.base, 0)
}

func (m *peakMeter) runtimeMax() int64 { return max(m.max, runtimeResident()) }

// runtimeResident is the memory the runtime has mapped and not released.
func runtimeResident() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()) - int64(s[1].Value.Uint64())
}

// procStatus returns a field of /proc/self/status given in kB, in bytes.
func procStatus(field string) (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
