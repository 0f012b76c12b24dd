package view

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"

	"github.com/refine-go/refine/checkpoint"
)

// GenerationStore lists and loads a session's kept generations, as
// checkpoint.Dir, checkpoint.Memory and pgcheckpoint.Store do (the methods
// of iterate.GenerationLoader).
type GenerationStore interface {
	Lister
	Generationer
	LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error)
}

// ReadOnly returns a Store that loads a session's newest generation that
// reads whole through s's Generations and LoadGeneration, never its Load:
// a damaged generation is skipped (and named in the checkpoint's Skipped)
// but left where it is, where checkpoint.Dir's Load would quarantine it. A
// viewer of a directory that loops are running in should read it so.
//
// Of a checkpoint.Dir, a generation whose file is there but whose envelope
// does not read (truncated), which Generations does not list, is found too
// and named in Skipped.
func ReadOnly(s GenerationStore) Store { return readOnly{s} }

type readOnly struct{ GenerationStore }

// SessionsAfter is the store's, if it has one (see [PageLister]).
func (r readOnly) SessionsAfter(ctx context.Context, after string) iter.Seq2[*checkpoint.Checkpoint, error] {
	return sessionsAfter(ctx, r.GenerationStore, after)
}

func (r readOnly) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	gens, err := r.Generations(ctx, session)
	if err != nil {
		return nil, err
	}
	return r.loadListed(ctx, session, gens)
}

// maxProbe bounds the generations past the newest listed that loadListed
// looks for.
const maxProbe = 64

// loadListed loads the newest generation of session that reads whole, of
// gens (as r.Generations listed them) and of any newer generation file a
// checkpoint.Dir holds that the listing left out.
func (r readOnly) loadListed(ctx context.Context, session string, gens []*checkpoint.Checkpoint) (*checkpoint.Checkpoint, error) {
	nums := make([]uint64, 0, len(gens)+1)
	for _, g := range gens {
		nums = append(nums, g.Generation)
	}
	// Generations lists only generations whose envelope reads: of a
	// directory, the files of newer generations (a truncated one) are
	// looked for by name, and loaded (damaged, or saved since the listing).
	if d, ok := r.GenerationStore.(*checkpoint.Dir); ok {
		next := uint64(1)
		if len(nums) > 0 {
			next = nums[len(nums)-1] + 1
		}
		dir := d.Path()
		if dir == "" {
			dir = "."
		}
		for i := 0; i < maxProbe; i++ {
			if _, err := os.Lstat(filepath.Join(dir, fmt.Sprintf("%s.%020d.ckpt", session, next))); err != nil {
				break
			}
			nums = append(nums, next)
			next++
		}
	}
	var skipped []uint64
	var errs []error
	for _, g := range slices.Backward(nums) {
		c, err := r.LoadGeneration(ctx, session, g)
		switch {
		case errors.Is(err, checkpoint.ErrNotFound):
			continue // pruned since the listing
		case errors.Is(err, checkpoint.ErrCorrupt):
			skipped = append(skipped, g)
			errs = append(errs, err)
			continue
		case err != nil:
			return nil, err
		}
		c.Skipped = skipped
		return c, nil
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("view: session %q has no readable generation: %w", session, errors.Join(errs...))
	}
	return nil, fmt.Errorf("%w: session %q", checkpoint.ErrNotFound, session)
}
