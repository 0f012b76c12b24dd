package pgcheckpoint

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SetSaveHook makes s call hook in each save, with the connection the save
// runs on and its pipeline, after the insert and the pruning are queued and
// before the fencing check is: statements the hook queues run between them,
// inside the save's transaction. Tests only.
func SetSaveHook(s *Store, hook func(ctx context.Context, conn *pgx.Conn, b *pgx.Batch)) {
	s.hook = hook
}
