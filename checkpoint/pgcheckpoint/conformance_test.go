package pgcheckpoint_test

import (
	"context"
	"testing"

	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
)

// store is the method set the engine discovers by type assertion.
type store interface {
	checkpointtest.Store
	Lock(ctx context.Context, session string) (uint64, func() error, error)
	Remove(ctx context.Context, session string) error
}

var _ store = (*pgcheckpoint.Store)(nil)

func TestConformance(t *testing.T) {
	tests := []struct {
		name string
		opts []pgcheckpoint.Option
	}{
		{"defaults", nil},
		{"keep_1_short_lease", []pgcheckpoint.Option{pgcheckpoint.Keep(1), pgcheckpoint.Lease(2e9)}},
		{"keep_all", []pgcheckpoint.Option{pgcheckpoint.KeepAll()}},
		{"keep_best_max_bytes", []pgcheckpoint.Option{pgcheckpoint.Keep(2), pgcheckpoint.KeepBest(), pgcheckpoint.MaxBytes(1 << 20)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool(t)
			checkpointtest.Run(t, func(t *testing.T) checkpointtest.Store {
				return openStore(t, pool, newSchema(t, pool), tc.opts...)
			})
		})
	}
}

// TestConformanceError: the error-returning form of the suite agrees.
func TestConformanceError(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	var stores []*pgcheckpoint.Store
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	err := checkpointtest.Test(func() (checkpointtest.Store, error) {
		// One schema, emptied before each check.
		if _, err := pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
			return nil, err
		}
		s, err := pgcheckpoint.New(context.Background(), pool, pgcheckpoint.Schema(schema))
		if err == nil {
			stores = append(stores, s)
		}
		return s, err
	})
	if err != nil {
		t.Error(err)
	}
}
