// Package fleet runs a service's own refine loops on a pool of its own
// processes, across machines, with nothing lost and nothing paid twice.
//
// It stands on two parts that share one PostgreSQL database (one schema,
// "fleet" by default): River (a PostgreSQL job queue) delivers one job per
// session, at least once; the PostgreSQL checkpoint store
// ([pgcheckpoint]) keeps each session's checkpoints under a lease and a
// fencing token, so that every session's progress is exactly-once however
// often its job is delivered. It is a nested module, so that River and pgx
// stay out of the core module.
//
// # Use
//
// A host registers each kind of loop it runs, with a name and a function that
// builds the loop (its [iterate.Worker], options and initial state) from
// typed arguments; then any process submits sessions, and worker processes
// run them:
//
//	f, err := fleet.New(ctx, pool)                      // creates or migrates the tables
//	research := fleet.MustRegister(f, "research", func(ctx context.Context, q Question) (fleet.Loop[Notes], error) {
//		return fleet.Loop[Notes]{
//			Worker:  &researcher{q: q},
//			Options: []iterate.Option{iterate.WithMaxIterations(6)},
//		}, nil
//	})
//	research.Submit(ctx, "q-42", Question{Text: "how is auth done?"}) // from any process
//	go f.Work(ctx)                                                    // in worker processes
//	res, err := research.Wait(ctx, "q-42")                            // a typed *iterate.Result[Notes]
//
// Every process registers the same kinds with the same settings: a worker
// whose engine settings differ from the ones a session was saved under
// refuses to continue it (*[iterate.SettingsChangedError], the job is
// retried, by this or another worker), rather than continuing a session
// under other rules.
//
// # Upgrades
//
// A kind says which settings its sessions may continue under when they
// differ from the ones they were saved under: [Loop.AllowChanges] names
// them as the error does ("max iterations", "strategy", "host settings",
// …). A version is [iterate.WithFingerprint] ("v2") with "host settings"
// allowed. During a rolling deploy a session refused by every worker
// [MaxAttempts] times fails; [Fleet.Retry] continues it once the new
// workers run.
//
// # Operations
//
// [GrantSQL] gives a role the least privileges the fleet needs on a
// schema created by a process that may; [New] on a current schema then
// changes nothing and takes no lock, and a New that migrates waits for
// another's set-up lock at most [MigrationTimeout]
// ([pgcheckpoint.ErrSchemaLocked]). [Kind.SubmitMany] submits a batch in
// one transaction. A fleet logs through [Logger] (nothing by default):
// failed runs at Warn; sessions given up and panics at Error; the newest
// error of each session is also [Session.LastError].
//
// # What the fleet promises
//
//   - A session's job completes only once the session's final checkpoint
//     (or its escalation) is durable: the fleet saves Strict (a run that
//     ends without an error has committed its stop), and after a run that
//     ended with an error beside its stop it checks the store's newest
//     checkpoint (its head, not its state). A storage outage leaves the session
//     resumable from its last good checkpoint and its job retried.
//   - A session is run by one worker at a time (the store's lease); a worker
//     that lost its lease cannot save (fencing) and stops.
//   - A task may run longer than the lease: the lease is renewed in the
//     background while the session runs, and River's job timeout is off.
//   - A worker that dies (SIGKILL, a lost machine) leaves its sessions'
//     leases to run out; every live worker looks for sessions whose job is
//     running while their lease has expired and hands them back to the
//     queue at once, so that a dead worker's session is picked up within
//     about a lease and a poll interval, not River's 30-second rescuer.
//   - A graceful stop (the context given to [Fleet.Work] ends: SIGTERM)
//     stops every loop at its next safe point, saves it as interrupted, and
//     hands its job back to be continued at once by any worker.
//   - With the task journal (always on under the fleet), a task that
//     finished, failed or not, is never run nor paid for twice: an
//     interrupted and resumed session spends what an uninterrupted one
//     would, and only the tasks in flight at the interruption run again
//     (after a graceful stop, what they had spent when they stopped is
//     charged too: a Work that spent nothing, or returns its context's
//     error with no usage, costs nothing). A task that fails once the stop
//     has begun is one of these, whatever its error.
//   - A session that escalates to a human is parked, not failed:
//     [Fleet.Answer] (or [Fleet.Reply], naming who answers), from any
//     process, resumes it on some worker with the answer. An open question
//     is answered once: a second or late answer is refused with an
//     *[AnswerError] ([ErrAnswered], naming the accepted answer, who gave
//     it and when), never silently dropped; the accepted answer is
//     recorded with the session ([Session.Answer], [Fleet.Answers]). [Fleet.Cancel] stops a session for good: the worker running it
//     stops at the next safe point, its latest checkpoint is saved with
//     status [Cancelled], and the pool never resumes it.
//   - A session whose job fails [MaxAttempts] times (a build function that
//     fails or panics, a worker refusing the session's settings, a lasting
//     storage fault) is not stranded: River gives its job up, the session
//     is listed as [iterate.Failed] with its last error, [Kind.Wait] and
//     [Kind.Result] return a *[FailedError], and [Fleet.Retry] runs it
//     again from its newest checkpoint. [Kind.Submit] does not revive it
//     (a submit is idempotent: the session exists).
//   - A session that stopped budget_exhausted is extended in place from
//     any process with [Fleet.Extend]: once the request is committed, a
//     worker resumes it under the raised limits ([iterate.ExtendBudget]),
//     every counter kept. Each stop is extended once (*[ExtendError]).
//     A session parked at its limit ([iterate.WithParkAtLimit]) shows as
//     escalated; Fleet.Extend answers its question with the extension.
//
// # Fencing the loop's own side effects
//
// [Holding] tells a Worker, from its context, which session it runs and the
// fencing token of the lease it holds, so that it can fence its own writes
// to other systems the way the store fences checkpoints.
package fleet
