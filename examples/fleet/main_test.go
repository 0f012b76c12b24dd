package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"
)

// Environment of the tests, as for checkpoint/pgcheckpoint.
const (
	// urlEnv names the server (a connection URL); .ci/run sets it through
	// .ci/postgres.sh.
	urlEnv = "REFINE_PG_URL"
	// requiredEnv=1 (or CI set) makes a missing server a failure, not a
	// skip.
	requiredEnv = "REFINE_PG_REQUIRED"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if buildDir != "" {
			os.RemoveAll(buildDir)
		}
	}))
}

// serverURL returns the test server's URL, skipping the test when there is
// none, or failing it when one is required.
func serverURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(urlEnv)
	if url == "" {
		msg := "no PostgreSQL server: set " + urlEnv + " to a connection URL (or source .ci/postgres.sh, which starts a throwaway server and sets it)"
		if os.Getenv(requiredEnv) == "1" || os.Getenv("CI") != "" {
			t.Fatal(msg + "; a server is required here (" + requiredEnv + "=1 or CI set)")
		}
		t.Skip(msg)
	}
	return url
}

// newPool connects to the test server; the pool is closed when t ends.
func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := connect(context.Background(), serverURL(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newSchema returns the name of a schema of t's own, dropped when t ends.
func newSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "fleet_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binary builds the fleet program once per test binary and returns its
// path.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "fleet-bin-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(buildDir, "fleet"), ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "fleet")
}

// proc is a fleet process started by a test, its output kept.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // of Wait, once done is closed
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the fleet program with args; it is killed when t ends if it
// still runs, and its output logged if t failed.
func start(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(binary(t), args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Its own process group, as every command a test starts.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, p.out.String())
		}
	})
	return p
}

// signal sends sig to p.
func (p *proc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
}

// wait waits at most d for p to exit and returns Wait's error.
func (p *proc) wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("%s still running after %v:\n%s", p.name, d, p.out.String())
		return nil
	}
}

// run runs the fleet program to its end and returns its output.
func run1(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(binary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("fleet %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// eventually polls cond every 50ms until it returns true or the deadline
// passes, then fails t with what.
func eventually(t testing.TB, deadline time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("after %v: %s", deadline, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
