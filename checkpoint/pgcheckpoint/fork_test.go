package pgcheckpoint_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

var _ iterate.GenerationLoader = (*pgcheckpoint.Store)(nil)

// A loop on PostgreSQL keeps its best state and its generations; a fork
// from generation 2, with an edited state, converges on its own, records
// its origin, and leaves the original session as it was.
func TestKeepBestAndFork(t *testing.T) {
	s := newStore(t, pgcheckpoint.KeepAll())
	ctx := context.Background()
	quality := []float64{0.2, 0.5, 0.9, 0.4, 0.3}
	w := iterate.Func(func(_ context.Context, essay string, r iterate.Round) (string, error) {
		return essay + fmt.Sprintf(" +%d", r.Iteration), nil
	})
	w.AssessFunc = func(_ context.Context, essay string) (gap.Assessment, error) {
		n := strings.Count(essay, "+")
		return gap.Assessment{Score: quality[min(n, len(quality)-1)],
			Complete: strings.HasPrefix(essay, "edited") && n >= 3}, nil
	}
	original := iterate.New(w, iterate.WithMaxIterations(4), iterate.WithKeepBest(),
		iterate.WithCheckpointer(s), iterate.WithSession("essay"))
	res, err := original.Run(ctx, "draft")
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Best.State != "draft +1 +2" || res.Best.Iteration != 2 {
		t.Fatalf("best %+v, want the state after iteration 2", res.Best)
	}
	before, err := s.Generations(ctx, "essay")
	if err != nil || len(before) < 3 {
		t.Fatalf("Generations: %d, %v", len(before), err)
	}
	newest := before[len(before)-1]
	if newest.BestGeneration == 0 {
		t.Errorf("the newest generation names no best")
	}
	fork := iterate.New(w, iterate.WithMaxIterations(8), iterate.WithKeepBest(), // other settings: a fork may
		iterate.WithCheckpointer(s), iterate.WithSession("essay-fork"))
	forked, err := fork.Resume(ctx, iterate.ForkFrom("essay", before[1].Generation), iterate.WithState("edited"))
	if err != nil {
		t.Fatal(err)
	}
	if forked.Status != iterate.Converged {
		t.Errorf("fork: %s (%s), want converged", forked.Status, forked.Reason)
	}
	c, err := s.Load(ctx, "essay-fork")
	if err != nil || c.Origin.Session != "essay" || c.Origin.Generation != before[1].Generation {
		t.Errorf("fork's origin %+v, %v", c.Origin, err)
	}
	after, err := s.Generations(ctx, "essay")
	if err != nil || len(after) != len(before) || after[len(after)-1].Generation != newest.Generation {
		t.Errorf("the original session changed: %d generations (newest %d), want %d (newest %d)",
			len(after), after[len(after)-1].Generation, len(before), newest.Generation)
	}
}

// A schema at version 1 (before keep-best and forks) is migrated by New,
// and its checkpoints load with no best and no origin.
func TestMigrateFromVersion1(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	ctx := context.Background()
	s := openStore(t, pool, schema)
	if err := s.Save(ctx, checkpointAt("old", 1)); err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, `ALTER TABLE `+q+`.checkpoints DROP COLUMN best_generation, DROP COLUMN origin_session,
		DROP COLUMN origin_generation; DELETE FROM `+q+`.schema_version WHERE version > 1`); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, pool, schema)
	c, err := s2.Load(ctx, "old")
	if err != nil || c.Generation != 1 || c.BestGeneration != 0 || c.Origin != (checkpoint.Origin{}) {
		t.Fatalf("Load after the migration: %+v, %v", c, err)
	}
	var v int
	if err := pool.QueryRow(ctx, `SELECT max(version) FROM `+q+`.schema_version`).Scan(&v); err != nil || v != pgcheckpoint.SchemaVersion {
		t.Errorf("schema version %d, %v; want %d", v, err, pgcheckpoint.SchemaVersion)
	}
}

func checkpointAt(session string, gen uint64) *checkpoint.Checkpoint {
	return &checkpoint.Checkpoint{Session: session, Generation: gen, Status: "running", Time: time.Unix(1, 0).UTC(), State: []byte("{}")}
}
