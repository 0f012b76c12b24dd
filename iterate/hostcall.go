package iterate

import (
	"context"
	"io"

	"github.com/refine-go/refine/checkpoint"
)

// This file holds the engine's calls into the host's checkpointer and
// codec that no other recover covers: a panic in them, on the loop's
// goroutine or a task's (a journal's save), becomes a *PanicError, the
// call's error, instead of crashing the process or reaching Run's caller.

func storeSave(ctx context.Context, cp Checkpointer, c *checkpoint.Checkpoint) (err error) {
	defer recoverInto(&err, "checkpointer Save")
	return cp.Save(ctx, c)
}

func storeSaveFrom(ctx context.Context, s StreamSaver, c *checkpoint.Checkpoint, state io.WriterTo) (err error) {
	defer recoverInto(&err, "checkpointer SaveFrom")
	return s.SaveFrom(ctx, c, state)
}

func storeLoad(ctx context.Context, cp Checkpointer, session string) (c *checkpoint.Checkpoint, err error) {
	defer recoverInto(&err, "checkpointer Load")
	return cp.Load(ctx, session)
}

func storeLock(ctx context.Context, l Locker, session string) (token uint64, release func() error, err error) {
	defer recoverInto(&err, "checkpointer Lock")
	return l.Lock(ctx, session)
}

// storeRelease calls a lock's release function.
func storeRelease(release func() error) (err error) {
	defer recoverInto(&err, "checkpointer Lock's release")
	return release()
}

func storeRemove(ctx context.Context, rm Remover, session string) (err error) {
	defer recoverInto(&err, "checkpointer Remove")
	return rm.Remove(ctx, session)
}

func storeGenerations(ctx context.Context, gl GenerationLoader, session string) (gens []*checkpoint.Checkpoint, err error) {
	defer recoverInto(&err, "checkpointer Generations")
	return gl.Generations(ctx, session)
}

func storeLoadGeneration(ctx context.Context, gl GenerationLoader, session string, gen uint64) (c *checkpoint.Checkpoint, err error) {
	defer recoverInto(&err, "checkpointer LoadGeneration")
	return gl.LoadGeneration(ctx, session, gen)
}

// unmarshal decodes data into v with codec, turning a panic of the codec
// into a *PanicError (see marshal).
func unmarshal(codec Codec, data []byte, v any) (err error) {
	defer recoverInto(&err, "decode")
	return codec.Unmarshal(data, v)
}

// observe calls the observer fn with e. A panic in fn is recovered, and the
// first one kept: the loop ends with it, a *PanicError, at its next step
// (see hostPanicked), whichever goroutine the event came from.
func (r *run[S]) observe(fn func(Event), e Event) {
	defer func() {
		if v := recover(); v != nil {
			r.hostPanic.CompareAndSwap(nil, &PanicError{Where: "observer", Value: v, Stack: stack()})
		}
	}()
	fn(e)
}
