// Package pgcheckpoint keeps the checkpoints of refine's loops in a
// PostgreSQL database (through pgx v5's pgxpool), so that a session can
// outlive its machine and be picked up by another host, and two hosts can
// never run one session at once.
//
// It is a nested module, so that the core module does not depend on pgx.
//
// # Use
//
//	pool, err := pgxpool.New(ctx, "postgres://refine@db.internal/refine")
//	if err != nil { ... }
//	defer pool.Close()
//	store, err := pgcheckpoint.New(ctx, pool) // creates or migrates its tables
//	if err != nil { ... }
//	defer store.Close() // releases leases still held
//	eng := iterate.New(worker,
//		iterate.WithCheckpointer(store),
//		iterate.WithSession("auth-research"),
//	)
//	res, err := eng.Resume(ctx) // on any host
//
// A [Store] has the methods of [checkpoint.Dir] (Save, Load, Lock, Remove,
// and Sessions, which lists the sessions' envelopes as Dir does), which the
// engine and tools discover by type assertion, and passes the conformance
// suite of package checkpointtest. [Store.Status] lists the sessions for
// operators, with who holds each.
//
// # Tables
//
// [New] creates, in the schema named by [Schema] ("refine" by default):
// checkpoints (one row per generation: the envelope as columns, Engine and
// State as bytea), leases (one row per session: holder, fencing token,
// expiry) and schema_version. Creation and migration run in one
// transaction under an advisory lock, so hosts starting at once take turns
// and find the work done; a schema newer than [SchemaVersion] is refused.
//
// # Saves
//
// A save is one transaction: it checks the session's lease (below), writes
// generation max(Generation, newest+1) and deletes the generations beyond
// [Keep]. It happens whole or not at all, also when the connection drops
// in the middle.
//
// # Leases and fencing
//
// [Store.Lock] takes a session's lease: a row with the holder's name, a
// fencing token one above the previous holder's, and an expiry [Lease]
// ahead by the database's clock (30s by default), renewed in the
// background every [Renew] interval (a third of the lease by default).
// A live lease makes Lock elsewhere fail with a *[checkpoint.LockedError]
// naming the holder ("host pid N #suffix"). When the holder dies, its lease
// runs out and the next Lock takes the session over with a higher token:
// the Lease setting bounds how long a dead holder blocks its session.
//
// A save carrying a token is refused with a *[checkpoint.FencedError]
// unless, inside its transaction, the lease row (locked FOR UPDATE) still
// names this Store with that token and has not expired. A holder paused or
// cut off past its lease can therefore write nothing after losing it, and
// the engine stops on the error. A save with token 0 is not fenced.
//
// # Time
//
// Lease expiries are compared with the database server's clock only, so
// hosts' clocks need not agree. Checkpoint times keep their nanoseconds.
package pgcheckpoint
