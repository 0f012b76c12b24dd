package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/fleet"
)

// reference runs a synthetic session uninterrupted in this process, on a
// memory store, as the fleet would (Strict, with the journal), and
// returns its summary.
func reference(t testing.TB, name string, a synthArgs, answer string) summary {
	t.Helper()
	loop := synthLoop(a, nil)
	store := new(checkpoint.Memory)
	eng := iterate.New(loop.Worker, append(loop.Options,
		iterate.WithCheckpointer(store, iterate.Strict|iterate.Journal), iterate.WithSession(name))...)
	res, err := eng.Run(context.Background(), loop.Initial)
	if res != nil && res.Status == iterate.Escalated {
		res, err = eng.Resume(context.Background(), iterate.WithAnswer(answer))
	}
	if err != nil {
		t.Fatalf("reference run of %s: %v", name, err)
	}
	return summarize(res)
}

// startFleet opens a fleet on a new pool, for one process's role in a test.
func startFleet(t testing.TB, url, schema string, opts ...fleet.Option) (*fleet.Fleet, *pgxpool.Pool) {
	t.Helper()
	pool := newPool(t, 20)
	f, err := fleet.New(context.Background(), pool, append([]fleet.Option{fleet.Schema(schema), fleet.Poll(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Store().Close() })
	return f, pool
}

// work runs f.Work until the test ends.
func work(t testing.TB, f *fleet.Fleet) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Work(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Work: %v", err)
		}
	})
}

func waitCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Sessions of a host's own kind, submitted from one process, run by two
// workers and waited for from a third, end exactly as uninterrupted runs.
func TestSubmitWorkWait(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	client, _ := startFleet(t, url, schema)
	kind := registerSynth(client, nil)
	for i := range 2 {
		w, _ := startFleet(t, url, schema, fleet.Holder(fmt.Sprintf("worker-%d", i+1)), fleet.Concurrency(2))
		registerSynth(w, nil)
		work(t, w)
	}
	ctx := waitCtx(t)
	args := func(i int) synthArgs {
		return synthArgs{Name: fmt.Sprintf("s-%d", i), Iterations: 3 + i%3, TaskMillis: 5}
	}
	for i := range 6 {
		ok, err := kind.Submit(ctx, fmt.Sprintf("s-%d", i), args(i))
		if err != nil || !ok {
			t.Fatalf("Submit s-%d: %v, %v", i, ok, err)
		}
	}
	// Idempotent by name.
	if ok, err := kind.Submit(ctx, "s-0", args(0)); err != nil || ok {
		t.Fatalf("second Submit: %v, %v; want false, nil", ok, err)
	}
	for i := range 6 {
		name := fmt.Sprintf("s-%d", i)
		res, err := kind.Wait(ctx, name)
		if err != nil {
			t.Fatalf("Wait %s: %v", name, err)
		}
		if diff := cmp.Diff(reference(t, name, args(i), ""), summarize(res)); diff != "" {
			t.Errorf("%s differs from an uninterrupted run (-want +got):\n%s", name, diff)
		}
	}
	list, err := client.Sessions(ctx)
	if err != nil || len(list) != 6 {
		t.Fatalf("Sessions: %d, %v", len(list), err)
	}
	for _, s := range list {
		if s.Status != iterate.Converged || s.Kind != "synthetic" {
			t.Errorf("session %s: %s of kind %s", s.Name, s.Status, s.Kind)
		}
	}
	// Bad input is refused with typed errors.
	other := fleet.MustRegister(client, "other", func(context.Context, struct{}) (fleet.Loop[synthState], error) {
		return fleet.Loop[synthState]{}, nil
	})
	var ke *fleet.KindError
	if _, err := other.Submit(ctx, "s-0", struct{}{}); !errors.As(err, &ke) || ke.Kind != "synthetic" {
		t.Errorf("Submit as another kind: %v", err)
	}
	if _, err := kind.Submit(ctx, "../bad", args(0)); !errors.Is(err, checkpoint.ErrInvalidSession) {
		t.Errorf("Submit of a bad name: %v", err)
	}
	if _, err := client.Session(ctx, "nope"); !errors.Is(err, fleet.ErrUnknownSession) {
		t.Errorf("Session of an unknown name: %v", err)
	}
}

// A session that escalates is parked, not failed; an answer from another
// process resumes it on a worker, with the answer.
func TestEscalationAnsweredElsewhere(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	registerSynth(w, nil)
	work(t, w)
	asker, _ := startFleet(t, url, schema)
	kind := registerSynth(asker, nil)
	ctx := waitCtx(t)
	a := synthArgs{Name: "esc", Iterations: 4, TaskMillis: 2, EscalateAt: 2}
	if _, err := kind.Submit(ctx, "esc", a); err != nil {
		t.Fatal(err)
	}
	res, err := kind.Wait(ctx, "esc")
	var ee *iterate.EscalationError
	if !errors.As(err, &ee) || res.Status != iterate.Escalated {
		t.Fatalf("Wait: %v, %v; want an escalation", res, err)
	}
	s, err := asker.Session(ctx, "esc")
	if err != nil || s.Status != iterate.Escalated || s.Question != "which way, esc?" || s.Answered {
		t.Fatalf("Session: %+v, %v", s, err)
	}
	if err := asker.Answer(ctx, "s-none", "x"); !errors.Is(err, fleet.ErrUnknownSession) {
		t.Errorf("Answer of an unknown session: %v", err)
	}
	// Another process answers.
	answerer, _ := startFleet(t, url, schema)
	if err := answerer.Answer(ctx, "esc", "left"); err != nil {
		t.Fatal(err)
	}
	res, err = kind.Wait(ctx, "esc")
	if err != nil {
		t.Fatalf("Wait after the answer: %v", err)
	}
	if diff := cmp.Diff(reference(t, "esc", a, "left"), summarize(res)); diff != "" {
		t.Errorf("answered session differs from an uninterrupted run (-want +got):\n%s", diff)
	}
	if res.State.Answer != "left" {
		t.Errorf("state's answer %q", res.State.Answer)
	}
	if err := answerer.Answer(ctx, "esc", "again"); !errors.Is(err, fleet.ErrNotEscalated) {
		t.Errorf("Answer of a converged session: %v", err)
	}
}

// A cancelled session stops at its next safe point, is saved as cancelled,
// and is never run again, nor submitted again.
func TestCancel(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	kind := registerSynth(w, nil)
	work(t, w)
	ctx := waitCtx(t)
	a := synthArgs{Name: "long", Iterations: 1000, TaskMillis: 20}
	if _, err := kind.Submit(ctx, "long", a); err != nil {
		t.Fatal(err)
	}
	// Once it runs (an iteration saved), cancel from another process.
	for {
		s, err := w.Session(ctx, "long")
		if err != nil {
			t.Fatal(err)
		}
		if s.Iteration >= 2 {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling a real server, not timing
	}
	other, _ := startFleet(t, url, schema)
	if err := other.Cancel(ctx, "long"); err != nil {
		t.Fatal(err)
	}
	res, err := kind.Wait(ctx, "long")
	if !errors.Is(err, fleet.ErrCancelled) || res == nil || res.Status != fleet.Cancelled {
		t.Fatalf("Wait: %+v, %v; want cancelled", res, err)
	}
	c, err := w.Store().Load(ctx, "long")
	if err != nil || iterate.Status(c.Status) != fleet.Cancelled {
		t.Fatalf("newest checkpoint: %+v, %v", c, err)
	}
	if res.Iterations != c.Iteration || res.Iterations >= 1000 {
		t.Errorf("cancelled at %d iterations, checkpoint at %d", res.Iterations, c.Iteration)
	}
	if _, err := kind.Submit(ctx, "long", a); !errors.Is(err, fleet.ErrCancelled) {
		t.Errorf("Submit of a cancelled session: %v", err)
	}
	if err := other.Answer(ctx, "long", "x"); !errors.Is(err, fleet.ErrCancelled) {
		t.Errorf("Answer of a cancelled session: %v", err)
	}
	// A queued session is cancelled before it starts.
	if _, err := kind.Submit(ctx, "never", synthArgs{Name: "never", Iterations: 2}); err != nil {
		t.Fatal(err)
	}
	if err := other.Cancel(ctx, "never"); err != nil {
		t.Fatal(err)
	}
	if _, err := kind.Wait(ctx, "never"); !errors.Is(err, fleet.ErrCancelled) {
		t.Errorf("Wait of a session cancelled early: %v", err)
	}
}

// A task longer than the lease finishes: the lease is renewed while the
// session runs, and no job timeout cuts it into slices.
func TestTaskLongerThanLease(t *testing.T) {
	pool := newPool(t, 4)
	taskLongerThanLease(t, newSchema(t, pool))
}

func taskLongerThanLease(t *testing.T, schema string) {
	url := serverURL(t)
	w, _ := startFleet(t, url, schema, fleet.Lease(time.Second))
	kind := registerSynth(w, nil)
	work(t, w)
	ctx := waitCtx(t)
	a := synthArgs{Name: "slow", Iterations: 3, TaskMillis: 1, LongMillis: 2500}
	if _, err := kind.Submit(ctx, "slow", a); err != nil {
		t.Fatal(err)
	}
	res, err := kind.Wait(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reference(t, "slow", a, ""), summarize(res)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	s, _ := w.Session(ctx, "slow")
	if s.Attempt != 1 {
		t.Logf("%+v", s)
		t.Errorf("the job took %d attempts; want 1 (one run, never interrupted)", s.Attempt)
	}
}

// A worker whose settings differ from the session's refuses to continue
// it, by name, and the session is left as it was.
func TestSettingsChangedRefused(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema)
	kind := registerSynth(w, nil)
	ctx := waitCtx(t)
	a := synthArgs{Name: "fp", Iterations: 3, EscalateAt: 1}
	if _, err := kind.Submit(ctx, "fp", a); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Work(wctx) }()
	if _, err := kind.Wait(ctx, "fp"); !errors.As(err, new(*iterate.EscalationError)) {
		t.Fatalf("Wait: %v", err)
	}
	stop()
	<-done
	// A second worker, deployed with another iteration limit.
	w2, _ := startFleet(t, url, schema)
	fleet.MustRegister(w2, "synthetic", func(_ context.Context, a synthArgs) (fleet.Loop[synthState], error) {
		l := synthLoop(a, nil)
		l.Options = append(l.Options, iterate.WithMaxIterations(a.Iterations+7))
		return l, nil
	})
	work(t, w2)
	if err := w2.Answer(ctx, "fp", "go"); err != nil {
		t.Fatal(err)
	}
	for {
		s, err := w2.Session(ctx, "fp")
		if err != nil {
			t.Fatal(err)
		}
		if s.LastError != "" {
			if s.Status != iterate.Escalated || !contains(s.LastError, "max iterations 4 → 10") {
				t.Errorf("session %+v; want still escalated, refused for its iteration limit", s)
			}
			break
		}
		time.Sleep(20 * time.Millisecond) // polling a real server, not timing
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestExample runs Example on the test server, in the default schema, and
// checks what it prints.
func TestExample(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 2)
	t.Cleanup(func() {
		pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+fleet.DefaultSchema+` CASCADE`)
	})
	t.Setenv("DATABASE_URL", url)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	Example()
	w.Close()
	os.Stdout = stdout
	out, _ := io.ReadAll(r)
	if want := "asked: approve T-42?\nconverged approved 4 steps\n"; string(out) != want {
		t.Errorf("Example printed %q, want %q", out, want)
	}
}

// A session's job completes only once its final checkpoint is durable:
// while the store refuses the final save (a trigger on the server), the
// job is retried and never completed over a checkpoint that says
// "running"; once the fault is gone the session converges, as an
// uninterrupted run, and its job completes. (Mutation caught: completing
// the job on any final status, without the durable check of
// jobWorker.Work: the job completes at its first attempt and the session
// stays "running" for good.)
func TestFinalSaveFails(t *testing.T) {
	url := serverURL(t)
	pool := newPool(t, 4)
	schema := newSchema(t, pool)
	w, _ := startFleet(t, url, schema, fleet.Lease(2*time.Second))
	kind := registerSynth(w, nil)
	ctx := waitCtx(t)
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := pool.Exec(ctx, `
		CREATE TABLE `+q+`.fault (on_ bool);
		INSERT INTO `+q+`.fault VALUES (true);
		CREATE FUNCTION `+q+`.refuse_final() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.status = 'converged' AND EXISTS (SELECT 1 FROM `+q+`.fault) THEN
				RAISE EXCEPTION 'injected: the final save is refused';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_final BEFORE INSERT ON `+q+`.checkpoints
			FOR EACH ROW EXECUTE FUNCTION `+q+`.refuse_final();`); err != nil {
		t.Fatal(err)
	}
	a := synthArgs{Name: "final", Iterations: 3, TaskMillis: 1}
	if _, err := kind.Submit(ctx, "final", a); err != nil {
		t.Fatal(err)
	}
	work(t, w)
	// The job is retried, never completed, while the fault lasts.
	for {
		s, err := w.Session(ctx, "final")
		if err != nil {
			t.Fatal(err)
		}
		if s.Job == "completed" {
			t.Fatalf("the job completed while the final save was refused: %+v", s)
		}
		if s.Attempt >= 2 {
			if s.Status.Final() {
				t.Fatalf("the newest checkpoint says %s though every final save was refused", s.Status)
			}
			break
		}
		time.Sleep(20 * time.Millisecond) // polling a real server, not timing
	}
	if _, err := pool.Exec(ctx, `DELETE FROM `+q+`.fault`); err != nil {
		t.Fatal(err)
	}
	res, err := kind.Wait(ctx, "final")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(reference(t, "final", a, ""), summarize(res)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for {
		s, err := w.Session(ctx, "final")
		if err != nil {
			t.Fatal(err)
		}
		if s.Job == "completed" {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling a real server, not timing
	}
}
