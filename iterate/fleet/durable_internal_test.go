package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// Rule (issue 30, item 6): the completion check confirms that a stopped
// session's checkpoint is durable from the checkpoint's head, without
// reading its state back. Checked under a role that may read every column
// of the checkpoints but the state: the check passes, where reading the
// state is refused. (Mutation caught: durable loading the whole newest
// checkpoint with the store's Load, as before — "permission denied".)
func TestDurableReadsNoState(t *testing.T) {
	url := os.Getenv("REFINE_PG_URL")
	if url == "" {
		t.Skip("REFINE_PG_URL not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var b [4]byte
	rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	schema, role := "fleet_durable_"+suffix, "fleet_nostate_"+suffix
	q, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize()
	defer admin.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+q+` CASCADE; DROP OWNED BY `+r+`; DROP ROLE IF EXISTS `+r)
	f, err := New(ctx, admin, Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer f.store.Close()
	token, release, err := f.store.Lock(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Save(ctx, &checkpoint.Checkpoint{Session: "big", Token: token, Status: string(iterate.Converged),
		Iteration: 3, Time: time.Now(), State: make([]byte, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := admin.Exec(ctx, `CREATE ROLE `+r+` LOGIN;
		GRANT USAGE ON SCHEMA `+q+` TO `+r+`;
		GRANT SELECT ON `+q+`.schema_version TO `+r+`;
		GRANT SELECT (session, generation, status, reason, iteration, question) ON `+q+`.checkpoints TO `+r); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User = role
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	store, err := pgcheckpoint.New(ctx, pool, pgcheckpoint.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	limited := &Fleet{pool: pool, store: store, cfg: f.cfg}
	if err := limited.durable(ctx, "big", stopped{status: iterate.Converged, iterations: 3}); err != nil {
		t.Fatalf("durable: %v", err)
	}
	err = limited.durable(ctx, "big", stopped{status: iterate.Converged, iterations: 4})
	if err == nil || !strings.Contains(err.Error(), "converged at iteration 3") {
		t.Errorf("durable of another stop: %v", err)
	}
	// The role cannot read the state: a check that did would fail.
	if _, err := pool.Exec(ctx, `SELECT state FROM `+q+`.checkpoints`); err == nil {
		t.Fatal("the role reads the state")
	}
}
