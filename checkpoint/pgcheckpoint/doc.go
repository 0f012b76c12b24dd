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
//	store, err := pgcheckpoint.New(ctx, pool) // creates or migrates its tables if needed
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
// expiry) and schema_version. It first reads the schema's version, with
// no lock: a current schema is used as it is, with no lock taken and
// nothing changed. Otherwise creation or migration runs in one
// transaction under an advisory lock, so hosts starting at once take turns
// and find the work done; no lock (that one, or one on a table) is waited
// for longer than [MigrationTimeout] (30s by default), also while reading
// the version of a current schema, after which New
// fails with an error matching [ErrSchemaLocked] that names the lock; it
// returns within twice that, whatever the database does. A schema newer
// than [SchemaVersion] is refused.
//
// A role that may not create anything can use the store: an operator
// creates the schema with the file schema.sql of this package (the output
// of [SchemaSQL], which creates what New creates), grants the role USAGE
// on the schema and SELECT, INSERT, UPDATE and DELETE on its tables, and
// the store is opened with [Migrate](false), which only checks the
// version.
//
// # Generations, keep-best and forks
//
// Each generation keeps the envelope fields of keep-best and forks
// (BestGeneration, Origin; schema version 2). [Store.Generations] lists a
// session's kept generations and [Store.LoadGeneration] loads any one of
// them, so that iterate.ForkFrom can start a session from it and tools can
// show a session's history. Which generations a save keeps is Keep (the
// newest n), or [KeepAll]; [KeepBest] never prunes the generation the
// newest names as holding the best state; [MaxBytes] bounds a session's
// Engine and State bytes. Pruning never removes the newest generation.
//
// # Saves
//
// A save is one transaction in one round trip: its statements (the insert
// of generation max(Generation, newest+1), which also deletes the
// generations beyond [Keep] and applies the save's settings, and, for a
// save with a token, the fencing check) are sent at once as a pipeline,
// which the server runs as one implicit transaction committed at its end.
// It happens whole or not at all, also when the connection drops in the
// middle; a save whose client is gone is rolled back by the server within
// a second (client_connection_check_interval, on PostgreSQL 14 and newer),
// rather than left holding its row. That setting is made for the
// connection's session, so that it holds for the next save on it from its
// start: the pool's connections keep it for their other users (a statement
// whose client is gone is ended).
//
// Every save has a deadline of its own: the lease, plus a second per 4 MiB
// of Engine and State; no row lock is waited for beyond it (lock_timeout,
// by the server's clock, also on a network that stopped delivering). A
// lock on the tables themselves (held by DDL: an ALTER, a LOCK TABLE, a
// CREATE INDEX), which a save waits for before it has written anything,
// ends when the client gives up: pgx cancels the statement, or the
// server's connection check sees the connection closed.
// A save with a token also ends as soon as the Store counts its lease
// lost. A connection that stops forwarding, or a lock the server waits
// for, cannot hold a loop for much longer than its lease.
//
// pgx keeps a connection's buffers as large as the largest message it
// sent or received: the connection that saved or loaded a checkpoint of 4
// MiB or more is closed afterwards rather than returned to the pool, so
// that an idle process does not hold copies of its largest state (the
// next use opens a new one).
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
// unless the lease row still names this Store with that token and has not
// expired. A holder paused or cut off past its lease can therefore write
// nothing after losing it, and the engine stops on the error. A save with
// token 0 is not fenced.
//
// The check is the last statement of the save's transaction, and locks the
// lease row (FOR NO KEY UPDATE) until the commit right after it:
//
//   - Renewals are never held up by a save in progress: until its last
//     statement, a save holds no lock a renewal needs (it writes only the
//     checkpoints table), however long its bytes take to arrive or to be
//     written. A long save (a large state, a slow link) does not fence its
//     own holder, its lease being renewed meanwhile.
//   - A save by a holder that lost its lease is refused: a takeover
//     changes the row's holder and token, and only happens once the lease
//     has expired; the check sees either.
//   - A takeover cannot interleave with a save's commit: a takeover updates
//     the lease row, so it waits for the lock the check took, that is for
//     the save's commit, and the new holder's Load then sees the save. A
//     takeover that committed first is seen by the check (the lock is taken
//     on the newest version of the row, which is checked again), and the
//     save is rolled back. Either the save lands before the takeover, or
//     not at all.
//   - The lock is held for one statement and a commit, both in the same
//     message as the rest of the pipeline: a client that stalls cannot
//     hold it, where a save that locked the row first (as this package
//     once did) held it, and so blocked renewals, for its whole length.
//
// Two calls save a round trip each for a host that runs sessions by the
// thousand (a fleet's worker): [Store.LockLoad] takes the lease and loads
// the newest checkpoint under it in one round trip (and runs the caller's
// own queries beside, such as reading its row of the session), and
// [Store.SaveRelease], for a run's last save, gives the lease back in the
// save's transaction: its check is then the update that frees the row.
//
// A renewal may take as long as the lease has left. A Store counts its
// lease lost when a renewal finds it expired or taken over, or when
// renewals have failed for a whole lease (counted from when the last good
// one was sent); its later saves are then refused at once, and its saves
// in flight end. Renewals use the pool's connections: size the pool above
// the number of saves that may run at once.
//
// # Time
//
// Lease expiries are compared with the database server's clock only, so
// hosts' clocks need not agree. Checkpoint times keep their nanoseconds.
package pgcheckpoint
