package pgcheckpoint_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkTransactionsPerRoundTrip measures what a round trip costs a
// save, beside its transaction: transactions shaped like a fenced save (an
// insert of an engine record of 2 KiB, a row lock on a lease row, the
// commit) of 4 sessions, sent one per round trip (4 goroutines, each a
// pipeline of its statements, as a save is) or two per round trip (2
// goroutines, each a pipeline of two transactions, each ended by its own
// Sync, so each commits or fails alone). It reports the CPU time, per
// transaction, of the server's processes and of this process (from
// Linux's /proc and getrusage): the share a group commit of concurrent
// saves would save (BENCHMARKS.md, "Throughput beside River").
func BenchmarkTransactionsPerRoundTrip(b *testing.B) {
	for _, perTrip := range []int{1, 2} {
		b.Run(strconv.Itoa(perTrip), func(b *testing.B) {
			pool := newPool(b)
			schema := newSchema(b, pool)
			ctx := context.Background()
			t, l := pgx.Identifier{schema, "t"}.Sanitize(), pgx.Identifier{schema, "l"}.Sanitize()
			if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()+`;
				CREATE TABLE `+t+` (session text, generation bigint, engine bytea, PRIMARY KEY (session, generation));
				CREATE TABLE `+l+` (session text PRIMARY KEY);
				INSERT INTO `+l+` SELECT 's' || i FROM generate_series(0, 3) i`); err != nil {
				b.Fatal(err)
			}
			insert := `INSERT INTO ` + t + ` (session, generation, engine) VALUES ($1, $2, $3)`
			fence := `SELECT 1 / count(*)::integer FROM (SELECT 1 FROM ` + l + ` WHERE session = $1 FOR NO KEY UPDATE) x`
			engine := []byte(strings.Repeat(`{"iteration":3,"metrics":{"coverage":0.5},"gaps":[{"kind":"coverage"}]}`, 30))
			goroutines := 4 / perTrip
			each := max(b.N/4, 1)
			server, client := serverCPU(), processCPU()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					sessions := make([]string, perTrip)
					for i := range sessions {
						sessions[i] = fmt.Sprint("s", g*perTrip+i)
					}
					for gen := 1; gen <= each; gen++ {
						if err := roundTrip(ctx, pool, insert, fence, sessions, gen, engine); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			n := float64(4 * each)
			b.ReportMetric(float64(serverCPU()-server)/float64(time.Microsecond)/n, "server-µs/txn")
			b.ReportMetric(float64(processCPU()-client)/float64(time.Microsecond)/n, "client-µs/txn")
		})
	}
}

// roundTrip sends, in one pipeline on one connection, a transaction per
// session (its insert of generation gen and its fencing check, then a
// Sync), and reads their results.
func roundTrip(ctx context.Context, pool *pgxpool.Pool, insert, fence string, sessions []string, gen int, engine []byte) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for name, sql := range map[string]string{"rt_insert": insert, "rt_fence": fence} {
		if _, err := conn.Conn().Prepare(ctx, name, sql); err != nil { // once a connection
			return err
		}
	}
	p := conn.Conn().PgConn().StartPipeline(ctx)
	g := []byte(strconv.Itoa(gen))
	for _, s := range sessions {
		p.SendQueryPrepared("rt_insert", [][]byte{[]byte(s), g, engine}, []int16{0, 0, 1}, nil)
		p.SendQueryPrepared("rt_fence", [][]byte{[]byte(s)}, nil, nil)
		p.SendPipelineSync()
	}
	if err := p.Flush(); err != nil {
		return err
	}
	for syncs := 0; syncs < len(sessions); {
		r, err := p.GetResults()
		if err != nil {
			return err
		}
		switch r := r.(type) {
		case *pgconn.ResultReader:
			if _, err := r.Close(); err != nil {
				return err
			}
		case *pgconn.PipelineSync:
			syncs++
		}
	}
	return p.Close()
}

// serverCPU returns the CPU time the processes named postgres have used so
// far (schedstat's first field): the server's, on this machine.
func serverCPU() time.Duration {
	var sum time.Duration
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		if comm, err := os.ReadFile("/proc/" + d.Name() + "/comm"); err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/schedstat")
		if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// processCPU returns this process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
