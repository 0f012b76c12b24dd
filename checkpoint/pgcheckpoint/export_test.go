package pgcheckpoint

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SetSaveHook makes s call hook inside each save's transaction, after the
// new generation is written and before the commit; an error it returns
// fails the save there. Tests only.
func SetSaveHook(s *Store, hook func(ctx context.Context, tx pgx.Tx) error) { s.hook = hook }
