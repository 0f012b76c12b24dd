package iterate_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// panickyCodec is the JSON codec, whose Encode (or Marshal) panics once
// armed.
type panickyCodec struct {
	armed   atomic.Bool
	marshal bool // Marshal panics, not Encode
}

func (c *panickyCodec) Marshal(v any) ([]byte, error) {
	if c.marshal && c.armed.Load() {
		panic("marshal broke")
	}
	return json.Marshal(v)
}

func (c *panickyCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func (c *panickyCodec) Encode(w io.Writer, v any) error {
	if !c.marshal && c.armed.Load() {
		panic("encoder broke")
	}
	return json.NewEncoder(w).Encode(v)
}

// armingWorker runs two parallel tasks an iteration; in iteration armAt its
// tasks arm the codec before they return, so that the first save to
// encode with it is a journal save, on a task's goroutine.
type armingWorker struct {
	codec *panickyCodec
	armAt int
}

func (w *armingWorker) Assess(context.Context, int) (gap.Assessment, error) {
	return gap.Assessment{Missing: []string{"more"}}, nil
}

func (w *armingWorker) Work(_ context.Context, _ int, t iterate.Task) (iterate.Outcome[int], error) {
	if t.Iteration == w.armAt {
		w.codec.armed.Store(true)
	}
	return iterate.Outcome[int]{Part: 1}, nil
}

func (w *armingWorker) Integrate(_ context.Context, s int, outs []iterate.Outcome[int]) (int, error) {
	for _, o := range outs {
		s += o.Part
	}
	return s, nil
}

// TestJournalSaveEncoderPanics: a codec that panics while a journal save
// encodes the state (on a task's goroutine, outside every recover before
// the fix: the process died) ends a strict run with the engine error
// "encoding state: …", a *PanicError; the checkpoint of the iteration
// before stays the latest. With Marshal panicking (a store without
// SaveFrom), the journaled outcome is warned about and the save of the
// state fails the same way.
func TestJournalSaveEncoderPanics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		marshal bool
	}{{"encode", false}, {"marshal", true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			codec := &panickyCodec{marshal: tc.marshal}
			var store iterate.Checkpointer = checkpoint.NewDir(dir)
			if tc.marshal {
				store = plainStore{store}
			}
			plan := iterate.StrategyFunc(func(context.Context, *iterate.Situation) (iterate.Plan, error) {
				return iterate.Plan{Action: iterate.Expand, Tasks: make([]iterate.Task, 2)}, nil
			})
			_, err := iterate.New[int](&armingWorker{codec: codec, armAt: 2}, iterate.WithMaxIterations(3),
				iterate.WithStrategy(plan), iterate.WithSession("s"), iterate.WithCodec(codec),
				iterate.WithCheckpointer(store, iterate.Strict|iterate.Journal)).Run(context.Background(), 0)
			var pe *iterate.PanicError
			if !errors.As(err, &pe) || pe.Where != "encode" || !strings.Contains(err.Error(), "encoding state: ") {
				t.Fatalf("Run: got %v, want the codec's panic as encoding state", err)
			}
			c, err := checkpoint.NewDir(dir).Load(context.Background(), "s")
			if err != nil {
				t.Fatal(err)
			}
			if c.Iteration != 1 || c.Status != string(iterate.Running) {
				t.Errorf("latest checkpoint: iteration %d, %s; want iteration 1, running", c.Iteration, c.Status)
			}
		})
	}
}
