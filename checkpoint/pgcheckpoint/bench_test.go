package pgcheckpoint_test

import (
	"context"
	"testing"

	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// BenchmarkSave measures one save (a transaction: fence check, insert,
// prune) of a checkpoint with a 4 KiB state, with and without a lease, for
// comparison with checkpoint.Dir's BenchmarkSave. The server's speed
// dominates: run it against the database you mean to use.
func BenchmarkSave(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		name := "unfenced"
		if fenced {
			name = "fenced"
		}
		b.Run(name, func(b *testing.B) {
			s := newStore(b)
			ctx := context.Background()
			c := checkpointtest.Checkpoint("bench", 1)
			c.State = make([]byte, 4<<10)
			if fenced {
				token, release, err := s.Lock(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				defer release()
				c.Token = token
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Save(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
