package fleet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// Rule: New waits for the fleet's set-up lock, held by a stalled migrator,
// no longer than MigrationTimeout, then fails with an error matching
// pgcheckpoint.ErrSchemaLocked that names the lock and the server process
// holding it. (Mutation caught: pg_advisory_lock without lock_timeout
// under a fixed minute, as before — New waits out its context and says
// nothing of the lock.)
func TestNewSchemaLocked(t *testing.T) {
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var pid int32
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid(), pg_advisory_lock(hashtext('refine-go/fleet'), hashtext($1))::text`,
		schema).Scan(&pid, new(string)); err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second
	start := time.Now()
	_, err = fleet.New(ctx, newPool(t, 4), fleet.Schema(schema), fleet.MigrationTimeout(timeout))
	took := time.Since(start)
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, pgcheckpoint.ErrSchemaLocked) {
		t.Fatalf("New behind a held set-up lock: %v; want ErrSchemaLocked", err)
	}
	for _, want := range []string{"pg_advisory_lock(hashtext('refine-go/fleet'), hashtext('" + schema + "'))", "PID " + strconv.Itoa(int(pid))} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q", want)
		}
	}
	if took > 2*timeout-timeout/4 {
		t.Errorf("New gave up after %v; want about %v", took, timeout)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
		t.Fatal(err)
	}
	f, err := fleet.New(ctx, pool, fleet.Schema(schema), fleet.MigrationTimeout(timeout))
	if err != nil {
		t.Fatalf("New once the lock is free: %v", err)
	}
	f.Store().Close()
}

// Rule: a role with only the grants of GrantSQL (no CREATE, no ownership)
// runs the fleet: New on the current schema, submit, work, escalate,
// answer, cancel, retry. (Mutation caught: grants without USAGE on the
// sequences, as pgcheckpoint's alone — submit fails with "permission
// denied for sequence river_job_id_seq".)
func TestLeastPrivilege(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	ctx := waitCtx(t)
	admin, err := fleet.New(ctx, pool, fleet.Schema(schema))
	if err != nil {
		t.Fatal(err)
	}
	admin.Store().Close()
	var b [4]byte
	rand.Read(b[:])
	role := "fleet_app_" + hex.EncodeToString(b[:])
	r := pgx.Identifier{role}.Sanitize()
	if _, err := pool.Exec(ctx, `CREATE ROLE `+r+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		pool.Exec(context.Background(), `DROP OWNED BY `+r+`; DROP ROLE `+r)
	})
	if _, err := pool.Exec(ctx, fleet.GrantSQL(schema, role)); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User = role
	cfg.MaxConns = 20
	app, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close)
	f, err := fleet.New(ctx, app, fleet.Schema(schema), fleet.Poll(100*time.Millisecond))
	if err != nil {
		t.Fatalf("New as %s: %v", role, err)
	}
	t.Cleanup(func() { f.Store().Close() })
	kind := registerSynth(f, nil)
	work(t, f)
	if _, err := kind.Submit(ctx, "lp", synthArgs{Name: "lp", Iterations: 3, TaskMillis: 1, EscalateAt: 1}); err != nil {
		t.Fatalf("Submit as %s: %v", role, err)
	}
	if _, err := kind.Wait(ctx, "lp"); !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatalf("Wait: %v", err)
	}
	if err := f.Reply(ctx, "lp", fleet.Answer{Text: "go", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	if res, err := kind.Wait(ctx, "lp"); err != nil || res.Status != iterate.Converged {
		t.Fatalf("Wait after the answer: %v, %v", res, err)
	}
	if _, err := kind.Submit(ctx, "lp-2", synthArgs{Name: "lp-2", Iterations: 1000, TaskMillis: 5}); err != nil {
		t.Fatal(err)
	}
	if err := f.Cancel(ctx, "lp-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := kind.Wait(ctx, "lp-2"); !errors.Is(err, fleet.ErrCancelled) {
		t.Fatalf("Wait of a cancelled session: %v", err)
	}
	if err := f.Retry(ctx, "lp"); !errors.Is(err, fleet.ErrNotFailed) {
		t.Errorf("Retry: %v", err)
	}
	if _, err := f.Sessions(ctx); err != nil {
		t.Fatal(err)
	}
}

// Rule: a session a worker runs before its first checkpoint is listed as
// running, not queued. (Mutation caught: the status taken from the
// checkpoint alone, as before — "queued" while its job runs.)
func TestRunningBeforeCheckpoint(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	building, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	kind := fleet.MustRegister(w, "synthetic", func(ctx context.Context, a synthArgs) (fleet.Loop[synthState], error) {
		once.Do(func() { close(building) }) // Result builds too
		<-release
		return synthLoop(a, nil), nil
	})
	work(t, w)
	ctx := waitCtx(t)
	if _, err := kind.Submit(ctx, "slow-start", synthArgs{Name: "slow-start", Iterations: 2}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-building:
	case <-ctx.Done():
		t.Fatal("the session never started")
	}
	s, err := w.Session(ctx, "slow-start")
	close(release)
	if err != nil || s.Status != iterate.Running || s.Job != "running" {
		t.Fatalf("Session while its build runs: %+v, %v; want running", s, err)
	}
	if res, err := kind.Wait(ctx, "slow-start"); err != nil || res.Status != iterate.Converged {
		t.Fatalf("Wait: %v, %v", res, err)
	}
}
