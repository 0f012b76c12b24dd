package pgcheckpoint_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// benchSizes are the sizes of the states the benchmarks save.
var benchSizes = []int{4 << 10, 1 << 20}

// benchState returns a state of n bytes that does not compress, so that
// the server stores all of them.
func benchState(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkSave measures one save (a pipelined transaction: settings,
// insert, prune and, with a lease, the fencing check) of a checkpoint with
// a state of 4 KiB and of 1 MiB, with and without a lease. Compare it with
// BenchmarkSQLFloor, the same bytes written by the plainest transaction, in
// the same run: the server's speed dominates both.
func BenchmarkSave(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		for _, size := range benchSizes {
			name := "unfenced/" + sizeName(size)
			if fenced {
				name = "fenced/" + sizeName(size)
			}
			b.Run(name, func(b *testing.B) {
				s := newStore(b)
				ctx := context.Background()
				c := checkpointtest.Checkpoint("bench", 1)
				c.State = benchState(size)
				if fenced {
					token, release, err := s.Lock(ctx, "bench")
					if err != nil {
						b.Fatal(err)
					}
					defer release()
					c.Token = token
				}
				b.SetBytes(int64(len(c.Engine) + len(c.State)))
				b.ReportAllocs()
				for b.Loop() {
					if err := s.Save(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSQLFloor measures what a save cannot beat: BEGIN; INSERT ... ON
// CONFLICT DO UPDATE; COMMIT of the same checkpoint (envelope, Engine and
// State) into a table like the store's, on the same server, through pgx's
// pool as the store uses it.
func BenchmarkSQLFloor(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			floor := newFloor(b)
			c := checkpointtest.Checkpoint("bench", 1)
			c.State = benchState(size)
			b.SetBytes(int64(len(c.Engine) + len(c.State)))
			b.ReportAllocs()
			for b.Loop() {
				floor.write(b, c)
			}
		})
	}
}

// BenchmarkSaveVsFloor alternates a fenced save and the SQL floor's
// transaction of the same bytes, on one server, so that both see the same
// load, and reports their times and their ratio (save/floor): on a shared
// machine, a steadier figure than two benchmarks run one after the other.
func BenchmarkSaveVsFloor(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			floor := newFloor(b)
			s := openStore(b, floor.pool, floor.schema)
			ctx := context.Background()
			c := checkpointtest.Checkpoint("bench", 1)
			c.State = benchState(size)
			token, release, err := s.Lock(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer release()
			fenced := *c
			fenced.Token = token
			var saves, floors time.Duration
			i := 0
			for b.Loop() {
				save := func() {
					start := time.Now()
					if err := s.Save(ctx, &fenced); err != nil {
						b.Fatal(err)
					}
					saves += time.Since(start)
				}
				plain := func() {
					start := time.Now()
					floor.write(b, c)
					floors += time.Since(start)
				}
				if i%2 == 0 {
					save()
					plain()
				} else {
					plain()
					save()
				}
				i++
			}
			b.ReportMetric(float64(saves.Nanoseconds())/float64(i), "save-ns/op")
			b.ReportMetric(float64(floors.Nanoseconds())/float64(i), "floor-ns/op")
			b.ReportMetric(float64(saves)/float64(floors), "save/floor")
		})
	}
}

// floor writes checkpoints by the plainest transaction, into a table like
// the store's.
type floor struct {
	pool   *pgxpool.Pool
	schema string
	sql    string
}

func newFloor(b *testing.B) *floor {
	pool := newPool(b)
	schema := newSchema(b, pool)
	openStore(b, pool, schema) // creates the store's tables
	table := pgx.Identifier{schema, "floor"}.Sanitize()
	if _, err := pool.Exec(context.Background(), `CREATE TABLE `+table+` (LIKE `+pgx.Identifier{schema, "checkpoints"}.Sanitize()+` INCLUDING ALL)`); err != nil {
		b.Fatal(err)
	}
	return &floor{pool: pool, schema: schema, sql: `INSERT INTO ` + table + `
		(session, generation, token, status, reason, iteration, time, time_ns, question, fingerprint, engine, state)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (session, generation) DO UPDATE SET token = excluded.token, status = excluded.status,
			reason = excluded.reason, iteration = excluded.iteration, time = excluded.time,
			time_ns = excluded.time_ns, question = excluded.question, fingerprint = excluded.fingerprint,
			engine = excluded.engine, state = excluded.state`}
}

// write is BEGIN; INSERT ... ON CONFLICT DO UPDATE; COMMIT of c.
func (f *floor) write(b *testing.B, c *checkpoint.Checkpoint) {
	ctx := context.Background()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, f.sql, c.Session, int64(c.Generation), int64(c.Token), c.Status, c.Reason, int64(c.Iteration),
		c.Time.UTC(), int32(0), c.Question, c.Fingerprint, c.Engine, c.State); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
}
