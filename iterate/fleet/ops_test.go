package fleet_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
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
