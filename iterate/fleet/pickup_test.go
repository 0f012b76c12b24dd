//go:build unix

package fleet_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/refine-go/refine/iterate/fleet"
)

var (
	pickupRuns  = flag.Int("fleet.pickup", 0, "TestPickup: SIGKILLs to measure (0 skips the test)")
	pickupLease = flag.Duration("fleet.lease", 2*time.Second, "TestPickup: the lease")
)

// TestPickup measures how long the sessions of a SIGKILLed worker wait for
// another worker: from the kill to a new holder's lease, for a worker that
// is River's leader and for one that is not, with room for the sessions on
// the survivor (no queueing). Run on demand, e.g.
//
//	go test -run TestPickup -fleet.pickup 6 -fleet.lease 2s -v
func TestPickup(t *testing.T) {
	if *pickupRuns == 0 {
		t.Skip("measures on demand: -fleet.pickup N")
	}
	lease := *pickupLease
	pool := newPool(t, 8)
	schema := newSchema(t, pool)
	q := pgx.Identifier{schema}.Sanitize()
	ctx := context.Background()
	client, _ := startFleet(t, serverURL(t), schema, fleet.Lease(lease))
	kind := registerSynth(client, nil)
	n := 0
	start := func() (*exec.Cmd, string) {
		n++
		name := fmt.Sprintf("worker-%d", n)
		cmd := startWorkerProcess(t, name, schema, lease)
		t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
		return cmd, name
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(ledgerDDL, q)); err != nil {
		t.Fatal(err)
	}
	workers := map[string]*exec.Cmd{}
	for range 2 {
		c, name := start()
		workers[name] = c
	}
	for i := range 4 {
		name := fmt.Sprintf("p-%d", i)
		kind.Submit(ctx, name, synthArgs{Name: name, Iterations: 100000, TaskMillis: 50})
	}
	results := map[bool][]time.Duration{}
	kills := map[bool]int{}
	for range *pickupRuns {
		// Wait until every session is held, and kill a worker holding
		// some, noting whether it is River's leader.
		var victim string
		var leaderKilled bool
		for wait := time.Now(); victim == ""; {
			if time.Since(wait) > 2*time.Minute {
				t.Fatal("the sessions were not all held after 2 minutes")
			}
			time.Sleep(100 * time.Millisecond) // polling the server
			var leader string
			pool.QueryRow(ctx, `SELECT leader_id FROM `+q+`.river_leader`).Scan(&leader)
			rows, _ := pool.Query(ctx, `SELECT holder FROM `+q+`.leases WHERE holder <> '' AND expires_at > clock_timestamp()`)
			holders, _ := pgx.CollectRows(rows, pgx.RowTo[string])
			if len(holders) < 4 {
				continue
			}
			names := slices.Sorted(maps.Keys(workers))
			// Alternate leader and non-leader where the holders allow.
			wantLeader := kills[true] <= kills[false]
			for _, name := range names {
				isLeader := strings.HasPrefix(leader, name+"_")
				holds := slices.ContainsFunc(holders, func(h string) bool { return strings.HasPrefix(h, name+" #") })
				if holds && (victim == "" || isLeader == wantLeader) {
					victim, leaderKilled = name, isLeader
				}
			}
		}
		tokens := map[string]int64{}
		rows, _ := pool.Query(ctx, `SELECT session, token FROM `+q+`.leases WHERE holder LIKE $1`, victim+" #%")
		var s string
		var tok int64
		pgx.ForEachRow(rows, []any{&s, &tok}, func() error { tokens[s] = tok; return nil })
		kills[leaderKilled]++
		cmd := workers[victim]
		delete(workers, victim)
		at := time.Now()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		c, name := start()
		workers[name] = c
		for s, old := range tokens {
			for wait := time.Now(); time.Since(wait) < 5*time.Minute; {
				var now int64
				pool.QueryRow(ctx, `SELECT token FROM `+q+`.leases WHERE session = $1`, s).Scan(&now)
				if now > old {
					break
				}
				time.Sleep(20 * time.Millisecond) // polling the server
			}
			results[leaderKilled] = append(results[leaderKilled], time.Since(at))
		}
	}
	for _, leader := range []bool{true, false} {
		d := results[leader]
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		t.Logf("lease %v, killed worker leader=%v: %d kills, %d sessions, median %v, max %v", lease, leader, kills[leader], len(d),
			d[len(d)/2].Round(10*time.Millisecond), d[len(d)-1].Round(10*time.Millisecond))
	}
}
