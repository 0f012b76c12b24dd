package pgcheckpoint_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
)

// liveHeap returns the live heap after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// Rule (issue 30, item 5): once a large checkpoint is saved and loaded
// and the caller dropped it, the process's live heap is back to what it
// was: the store keeps no copy of it (pgx keeps a connection's buffers as
// large as its largest message, so the connection of a large checkpoint is
// closed rather than pooled). (Mutation caught: releasing that connection
// to the pool, as before — the heap keeps one copy of the state per save
// and per load, 48 MB here.)
func TestLargeCheckpointNotRetained(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := openStore(t, pool, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const size = 24 << 20
	before := liveHeap()
	for i := range 2 {
		state := make([]byte, size) // pgx's buffers are as large, whatever the bytes
		state[0] = byte(i)
		token, release, err := s.Lock(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		err = s.Save(ctx, &checkpoint.Checkpoint{Session: "big", Token: token, Status: "running",
			Iteration: i + 1, Time: time.Now(), State: state})
		release()
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Load(ctx, "big")
		if err != nil || len(c.State) != size {
			t.Fatalf("Load: %v", err)
		}
	}
	if grew := liveHeap() - before; grew > size/3 {
		t.Errorf("the live heap grew by %d MB after the checkpoints were dropped; want about 0", grew>>20)
	}
}
