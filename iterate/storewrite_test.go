package iterate_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

var errDiskWrite = errors.New("disk write failed")

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskWrite }

// writeFailingStore is a StreamSaver whose file fails every write: the
// state's stream fails in the store's writer, not in the codec.
type writeFailingStore struct{ checkpoint.Memory }

func (s *writeFailingStore) SaveFrom(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error {
	if _, err := state.WriteTo(failingWriter{}); err != nil {
		return err
	}
	return errors.New("the stream did not fail")
}

// TestStreamedSaveStoreWriteFails: a save whose stream fails in the store's
// writer ends a strict run with the store's error, not as "encoding state"
// (an error of the codec's). (The mutations that kept the writer's error
// from being recorded, in countingWriter.Write, passed every other test.)
func TestStreamedSaveStoreWriteFails(t *testing.T) {
	_, err := iterate.New(iterate.Func(step1), iterate.WithMaxIterations(2),
		iterate.WithCheckpointer(&writeFailingStore{}, iterate.Strict)).Run(context.Background(), 0)
	if !errors.Is(err, errDiskWrite) || strings.Contains(err.Error(), "encoding state") {
		t.Fatalf("Run: %v, want the store's write error, not an encoding error", err)
	}
}
