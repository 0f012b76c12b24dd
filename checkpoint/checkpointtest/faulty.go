package checkpointtest

import (
	"context"
	"sync"

	"github.com/refine-go/refine/checkpoint"
)

// Faulty wraps a Store and injects failures at the persist boundaries: the
// saves and loads its functions select fail with their error without
// reaching the store, as a full disk or a vanished volume would. It lets a
// test check how a loop copes (a transient save failure, a damaged store on
// resume). Lock and Remove pass through to the store when it has them;
// otherwise Lock always succeeds with token 0 (unfenced) and excludes
// nothing, and Remove does nothing.
//
// A Faulty is safe for concurrent use if its functions and its store are.
type Faulty struct {
	// Store is the store wrapped.
	Store Store
	// FailSave, when set, is asked before the n-th save (1-based); a non-nil
	// error fails that save.
	FailSave func(n int, c *checkpoint.Checkpoint) error
	// FailLoad, when set, is asked before the n-th load (1-based).
	FailLoad func(n int, session string) error

	mu           sync.Mutex
	saves, loads int
}

// Save saves c unless FailSave fails it.
func (f *Faulty) Save(ctx context.Context, c *checkpoint.Checkpoint) error {
	f.mu.Lock()
	f.saves++
	n := f.saves
	f.mu.Unlock()
	if f.FailSave != nil {
		if err := f.FailSave(n, c); err != nil {
			return err
		}
	}
	return f.Store.Save(ctx, c)
}

// Load loads the session unless FailLoad fails it.
func (f *Faulty) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	f.mu.Lock()
	f.loads++
	n := f.loads
	f.mu.Unlock()
	if f.FailLoad != nil {
		if err := f.FailLoad(n, session); err != nil {
			return nil, err
		}
	}
	return f.Store.Load(ctx, session)
}

// Lock locks the session through the store, if it can.
func (f *Faulty) Lock(ctx context.Context, session string) (uint64, func() error, error) {
	if l, ok := f.Store.(locker); ok {
		return l.Lock(ctx, session)
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	return 0, func() error { return nil }, nil
}

// Remove removes the session through the store, if it can.
func (f *Faulty) Remove(ctx context.Context, session string) error {
	if r, ok := f.Store.(remover); ok {
		return r.Remove(ctx, session)
	}
	return ctx.Err()
}

// Calls returns how many saves and loads were asked of f.
func (f *Faulty) Calls() (saves, loads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saves, f.loads
}

var (
	_ Store   = (*Faulty)(nil)
	_ locker  = (*Faulty)(nil)
	_ remover = (*Faulty)(nil)
)
