package checkpoint_test

import (
	"context"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// TestMaxBytesIsTheEncodedSize: MaxBytes counts a generation as the bytes
// Marshal encodes it to (Memory computes the size, a Dir has the file):
// two generations fit a limit of exactly their sizes, and not one byte
// less, for records of both versions, with and without an engine record
// and a state. (Memory's count, encodedSize, survived mutations of its
// arithmetic: no test held it to Marshal's length.)
func TestMaxBytesIsTheEncodedSize(t *testing.T) {
	ctx := context.Background()
	type generations interface {
		Save(context.Context, *checkpoint.Checkpoint) error
		Generations(context.Context, string) ([]*checkpoint.Checkpoint, error)
	}
	stores := []struct {
		name string
		new  func(t *testing.T, maxBytes int64) generations
	}{
		{"memory", func(t *testing.T, maxBytes int64) generations {
			return &checkpoint.Memory{KeepAll: true, MaxBytes: maxBytes}
		}},
		{"dir", func(t *testing.T, maxBytes int64) generations {
			return checkpoint.NewDir(t.TempDir(), checkpoint.KeepAll(), checkpoint.MaxBytes(maxBytes))
		}},
	}
	kinds := []struct {
		name string
		of   func(gen uint64) *checkpoint.Checkpoint
	}{
		{"version_2", func(gen uint64) *checkpoint.Checkpoint { return checkpointtest.Checkpoint("s", gen) }},
		{"version_3", func(gen uint64) *checkpoint.Checkpoint {
			c := checkpointtest.Checkpoint("s", gen)
			c.BestGeneration = gen
			c.Origin = checkpoint.Origin{Session: "origin", Generation: 7}
			return c
		}},
		{"no_engine_no_state", func(gen uint64) *checkpoint.Checkpoint {
			c := checkpointtest.Checkpoint("s", gen)
			c.Engine, c.State = nil, nil
			return c
		}},
	}
	for _, st := range stores {
		for _, k := range kinds {
			var total int64
			for gen := uint64(1); gen <= 2; gen++ {
				b, err := checkpoint.Marshal(k.of(gen))
				if err != nil {
					t.Fatal(err)
				}
				total += int64(len(b))
			}
			for _, tc := range []struct {
				name  string
				limit int64
				want  int // generations kept
			}{
				{"limit_of_both", total, 2},
				{"one_byte_less", total - 1, 1},
			} {
				t.Run(st.name+"/"+k.name+"/"+tc.name, func(t *testing.T) {
					s := st.new(t, tc.limit)
					for gen := uint64(1); gen <= 2; gen++ {
						if err := s.Save(ctx, k.of(gen)); err != nil {
							t.Fatal(err)
						}
					}
					gens, err := s.Generations(ctx, "s")
					if err != nil {
						t.Fatal(err)
					}
					if len(gens) != tc.want {
						t.Errorf("MaxBytes(%d) of two generations of %d bytes: %d kept, want %d", tc.limit, total, len(gens), tc.want)
					}
				})
			}
		}
	}
}

// TestMarshalAllocatesOnlyItsResult: once its pooled buffer is warm,
// Marshal allocates the slice it returns and nothing else: the result is
// sized for the checksum too, never grown.
func TestMarshalAllocatesOnlyItsResult(t *testing.T) {
	if checkpoint.RaceEnabled {
		t.Skip("allocation counts are not checked under the race detector")
	}
	c := checkpointtest.Checkpoint("s", 3)
	c.State = make([]byte, 1000)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := checkpoint.Marshal(c); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("Marshal allocates %v times, want 1", allocs)
	}
}

// TestUnmarshalWithoutStateIsNil: a checkpoint saved without an engine
// record or a state (nil or empty: the format does not tell them apart)
// decodes with both nil, so that it equals, field for field, what Memory
// gives back of one saved with them nil, and `c.State == nil` tells a
// checkpoint without a state.
func TestUnmarshalWithoutStateIsNil(t *testing.T) {
	for _, tc := range []struct {
		name          string
		engine, state []byte
	}{
		{"nil", nil, nil},
		{"empty", []byte{}, []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkpointtest.Checkpoint("s", 2)
			c.Engine, c.State = tc.engine, tc.state
			data, err := checkpoint.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := checkpoint.Unmarshal(data)
			if err != nil {
				t.Fatal(err)
			}
			if got.Engine != nil || got.State != nil {
				t.Errorf("Unmarshal: Engine %#v, State %#v; want both nil", got.Engine, got.State)
			}
		})
	}
}
