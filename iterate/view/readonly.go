package view

import (
	"context"
	"errors"
	"fmt"
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
func ReadOnly(s GenerationStore) Store { return readOnly{s} }

type readOnly struct{ GenerationStore }

func (r readOnly) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	gens, err := r.Generations(ctx, session)
	if err != nil {
		return nil, err
	}
	var skipped []uint64
	var errs []error
	for _, g := range slices.Backward(gens) {
		c, err := r.LoadGeneration(ctx, session, g.Generation)
		switch {
		case errors.Is(err, checkpoint.ErrNotFound):
			continue // pruned since the listing
		case errors.Is(err, checkpoint.ErrCorrupt):
			skipped = append(skipped, g.Generation)
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
