//go:build unix

package pgcheckpoint_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/checkpoint/pgcheckpoint"
	"github.com/refine-go/refine/iterate"
)

// The helper process: TestHelperHolder, run by the test binary re-executed
// with helperEnv set to a mode, the schema in helperSchemaEnv.
const (
	helperSchemaEnv = "REFINE_PG_HELPER_SCHEMA"
	helperPrefix    = "HELPER "
)

// Counter is the state of the engine loop of TestKilledHolder.
type Counter struct {
	N     int   `json:"n"`
	Trail []int `json:"trail"`
}

const (
	engineSession  = "two-hosts"
	engineRounds   = 6
	engineBlocksAt = 3 // the child blocks in this iteration, to be killed
)

// newEngine returns the loop both hosts run: engineRounds iterations, each
// adding its number to the trail and charging 10 tokens. block, when set,
// is called at the start of each round.
func newEngine(store iterate.Checkpointer, block func(iteration int)) iterate.Engine[Counter] {
	return iterate.New(iterate.Func(func(ctx context.Context, c Counter, r iterate.Round) (Counter, error) {
		if block != nil {
			block(r.Iteration)
		}
		r.Charge(budget.Usage{Tokens: 10})
		c.N++
		c.Trail = append(append([]int(nil), c.Trail...), r.Iteration)
		return c, nil
	}),
		iterate.WithMaxIterations(engineRounds),
		iterate.WithCheckpointer(store),
		iterate.WithSession(engineSession),
	)
}

// TestHelperHolder is the child process of the tests below; it does
// nothing in a normal run.
func TestHelperHolder(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	say := func(format string, args ...any) { fmt.Printf(helperPrefix+format+"\n", args...) }
	ctx := context.Background()
	pool := newPool(t)
	s, err := pgcheckpoint.New(ctx, pool, append([]pgcheckpoint.Option{pgcheckpoint.Schema(os.Getenv(helperSchemaEnv)), pgcheckpoint.Keep(1000)}, leases...)...)
	if err != nil {
		say("error %v", err)
		os.Exit(1)
	}
	switch mode {
	case "engine":
		// Runs the loop and blocks in iteration engineBlocksAt, to be
		// killed there.
		newEngine(s, func(iteration int) {
			if iteration == engineBlocksAt {
				say("blocked")
				select {}
			}
		}).Run(ctx, Counter{})
		say("error the loop ended")
	case "saver":
		// Holds the session and saves every 20ms until fenced.
		token, _, err := s.Lock(ctx, "paused")
		if err != nil {
			say("error %v", err)
			os.Exit(1)
		}
		say("locked %d", token)
		for gen := uint64(1); ; gen++ {
			c := checkpointtest.Checkpoint("paused", gen)
			c.Token = token
			err := s.Save(ctx, c)
			switch {
			case errors.Is(err, checkpoint.ErrFenced):
				say("fenced %v", err)
				os.Exit(0)
			case err != nil:
				say("failed %v", err) // e.g. its session ended while paused
			default:
				say("saved %d", gen)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	os.Exit(2)
}

// child is a running helper process and the lines it says.
type child struct {
	cmd   *exec.Cmd
	lines chan string
}

func startChild(t *testing.T, mode, schema string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHolder$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperSchemaEnv+"="+schema, urlEnv+"="+serverURL(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), helperPrefix); ok {
				c.lines <- line
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return c
}

// await returns the child's next line starting with prefix, failing t if
// it says "error" or nothing such within the deadline.
func (c *child) await(t *testing.T, prefix string, deadline time.Duration) string {
	t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child exited before saying %q", prefix)
			}
			if strings.HasPrefix(line, "error") {
				t.Fatalf("the child: %s", line)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timer.C:
			t.Fatalf("the child did not say %q within %v", prefix, deadline)
		}
	}
}

// TestKilledHolder: two hosts contend for one session; exactly one runs;
// SIGKILL it mid-iteration, and the other takes over once the lease runs
// out and finishes the loop with the same state and counters as an
// uninterrupted run.
func TestKilledHolder(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := openStore(t, pool, schema, leases...)
	ctx := context.Background()

	want, err := newEngine(new(checkpoint.Memory), nil).Run(ctx, Counter{})
	if err != nil {
		t.Fatalf("the uninterrupted run: %v", err)
	}

	c := startChild(t, "engine", schema)
	c.await(t, "blocked", 30*time.Second)
	// The child runs: this host cannot.
	eng := newEngine(s, nil)
	_, err = eng.Resume(ctx)
	var le *checkpoint.LockedError
	if !errors.As(err, &le) || !strings.Contains(le.Holder, "pid "+strconv.Itoa(c.cmd.Process.Pid)+" ") {
		t.Fatalf("Resume while the child runs: got %v, want a LockedError naming the child's pid %d", err, c.cmd.Process.Pid)
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	killed := time.Now()

	var got *iterate.Result[Counter]
	eventually(t, 10*time.Second, "the session was not taken over after its holder was killed", func() bool {
		got, err = eng.Resume(ctx)
		if errors.Is(err, checkpoint.ErrLocked) {
			return false
		}
		if err != nil {
			t.Fatalf("Resume after the kill: %v", err)
		}
		return true
	})
	t.Logf("taken over %v after the kill (lease %v)", time.Since(killed).Round(time.Millisecond), testLease)
	// Wall time differs between runs; metrics and history hold timings.
	opts := cmp.Options{cmpopts.IgnoreFields(iterate.Result[Counter]{}, "History"), cmpopts.IgnoreFields(iterate.Totals{}, "Duration"), cmpopts.IgnoreFields(budget.Usage{}, "Wall")}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("the taken-over run ended unlike an uninterrupted one (-want +got):\n%s", diff)
	}
}

// TestPausedHolder: a holder paused past its lease (SIGSTOP) loses the
// session to another host; resumed (SIGCONT), its next save is refused and
// it stops, and nothing it wrote after losing the lease is in the database.
func TestPausedHolder(t *testing.T) {
	pool := newPool(t)
	schema := newSchema(t, pool)
	s := openStore(t, pool, schema, leases...)
	ctx := context.Background()

	c := startChild(t, "saver", schema)
	var childToken uint64
	fmt.Sscanf(c.await(t, "locked", 30*time.Second), "locked %d", &childToken)
	c.await(t, "saved 3", 10*time.Second)
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var token uint64
	var release func() error
	eventually(t, 10*time.Second, "the paused holder's session was not taken over", func() bool {
		var err error
		token, release, err = s.Lock(ctx, "paused")
		if err != nil && !errors.Is(err, checkpoint.ErrLocked) {
			t.Fatal(err)
		}
		return err == nil
	})
	defer release()
	if token <= childToken {
		t.Errorf("token after takeover %d, want above the paused holder's %d", token, childToken)
	}
	last, err := s.Load(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	line := c.await(t, "fenced", 10*time.Second)
	t.Logf("the paused holder, resumed: %s", line)
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("the paused holder exited with %v, want 0 (stopped on being fenced)", err)
	}
	var after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "checkpoints"}.Sanitize()+` WHERE session = 'paused' AND generation > $1`, int64(last.Generation)).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != 0 {
		t.Errorf("%d generations written after the takeover (the newest then was %d)", after, last.Generation)
	}
	mine := checkpointtest.Checkpoint("paused", 1)
	mine.Token = token
	if err := s.Save(ctx, mine); err != nil {
		t.Errorf("the new holder's Save: %v", err)
	}
}
