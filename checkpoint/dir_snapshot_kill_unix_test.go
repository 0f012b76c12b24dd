//go:build unix

package checkpoint_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// killAt returns a save hook that SIGKILLs the process at the n-th time it
// reaches stage, after saying "reached" on its standard output.
func killAt(stage string, n int) func(string) error {
	seen := 0
	return func(st string) error {
		if st != stage {
			return nil
		}
		if seen++; seen == n {
			os.Stdout.WriteString("reached\n")
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	}
}

// TestSnapshotHelperProcess is not a test: run by TestDirSnapshotKill as a
// child process (helperEnv "snapshot"), it creates sessions for ever,
// removes every third one, and every fourth pages through the list with a
// new Dir (which lists the directory and writes the snapshot if there is
// none to trust), compacting the journal every 300 bytes. With
// HELPER_STAGE set, it kills itself at the HELPER_N-th time a Dir reaches
// that stage. It says "ready" once it has saved.
func TestSnapshotHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "snapshot" {
		t.Skip("helper process for TestDirSnapshotKill")
	}
	dir := os.Getenv("HELPER_DIR")
	var hook func(string) error
	if stage := os.Getenv("HELPER_STAGE"); stage != "" {
		n, _ := strconv.Atoi(os.Getenv("HELPER_N"))
		hook = killAt(stage, n)
	}
	newDir := func() *checkpoint.Dir {
		d := checkpoint.NewDir(dir)
		checkpoint.SetCompaction(d, 300, 64)
		if hook != nil {
			checkpoint.SetSaveHook(d, hook)
		}
		return d
	}
	w := newDir()
	prefix := "p" + strconv.Itoa(os.Getpid())
	for i := 0; ; i++ {
		if err := w.Save(ctx, checkpointtest.Checkpoint(fmt.Sprintf("%s-%04d", prefix, i), 1)); err != nil {
			os.Exit(3)
		}
		if i%3 == 2 {
			if err := w.Remove(ctx, fmt.Sprintf("%s-%04d", prefix, i-1)); err != nil {
				os.Exit(4)
			}
		}
		if i%4 == 3 {
			for _, err := range newDir().SessionsAfter(ctx, "") {
				if err != nil {
					os.Exit(5)
				}
			}
		}
		if i == 0 {
			os.Stdout.WriteString("ready\n")
		}
	}
}

// TestDirSnapshotKill guards the snapshot of the sessions journal under
// kills (issue 31, item 11): a process creating and removing sessions,
// reading the list (listing, writing and compacting the snapshot) is
// SIGKILLed at a random instant, and at each stage of a snapshot's write
// (before it, and with its temporary file written, before the rename),
// again and again in the same directory; after each kill a new Dir's
// SessionsAfter lists what Sessions (a listing) lists, and a Dir that
// lists the directory removes a killed write's temporary file. 30 random
// kills (6 with -short). Mutations caught: a listing leaving the
// temporary files of a killed write (".sessions.index.tmp…" left); see
// TestDirSessionsSnapshot for what makes the list right, which no kill
// breaks.
func TestDirSnapshotKill(t *testing.T) {
	kills := 30
	if testing.Short() {
		kills = 6
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	run := func(when string, env ...string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotHelperProcess$", "-test.count=1")
		cmd.Env = append(append(os.Environ(), helperEnv+"=snapshot", "HELPER_DIR="+dir), env...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		line, err := r.ReadString('\n')
		if len(env) > 0 && line == "ready\n" {
			line, err = r.ReadString('\n') // a stage may come first
		}
		want := "ready\n"
		if len(env) > 0 {
			want = "reached\n"
		}
		if err != nil || line != want {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s: the helper said %q, %v; want %q", when, line, err, want)
		}
		if len(env) == 0 {
			time.Sleep(time.Duration(rng.IntN(30000)) * time.Microsecond)
			cmd.Process.Kill()
		}
		cmd.Wait()
		got, _ := pageOf(t, checkpoint.NewDir(dir), "")
		if want := listedSessions(t, dir); !slices.Equal(got, want) {
			t.Fatalf("%s: a new Dir's SessionsAfter = %v, Sessions lists %v", when, got, want)
		}
	}
	for i := range kills {
		run(fmt.Sprintf("kill %d", i))
	}
	for _, stage := range []string{"snapshot", "snapshot rename"} {
		for n := 1; n <= 3; n++ {
			run(fmt.Sprintf("kill at %s #%d", stage, n), "HELPER_STAGE="+stage, "HELPER_N="+strconv.Itoa(n))
		}
	}
	// The kills at "snapshot rename" left temporary files; a listing
	// removes them.
	os.Remove(filepath.Join(dir, snapshotFile))
	pageOf(t, checkpoint.NewDir(dir), "")
	for _, name := range listDirAll(t, dir) {
		if strings.HasPrefix(name, snapshotFile+".tmp") {
			t.Errorf("a listing left %s, a killed write's temporary file", name)
		}
	}
}

// TestPruneLockHelperProcess is not a test: run by TestDirPruneAtLockKill
// as a child process (helperEnv "prunelock"), it locks the session "s"
// with a Dir keeping 2 generations, killing itself at HELPER_STAGE of the
// prune at Lock.
func TestPruneLockHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "prunelock" {
		t.Skip("helper process for TestDirPruneAtLockKill")
	}
	d := checkpoint.NewDir(os.Getenv("HELPER_DIR"), checkpoint.Keep(2))
	checkpoint.SetSaveHook(d, killAt(os.Getenv("HELPER_STAGE"), 1))
	d.Lock(ctx, "s")
	os.Stdout.WriteString("not killed\n")
}

// TestDirPruneAtLockKill guards the crash window of the prune at Lock
// (issue 31, item 10): a session whose index names generations 1–3, its
// newer ones 4–6 found by name (saves killed before their prune, the
// index stale), is locked by a Dir keeping 2, whose prune deletes 1–4 —
// 4 above the index's newest, breaking the chain its readers follow —
// and is SIGKILLed right before and right after the prune, before Lock
// rewrites the index from its listing. After each kill a new Dir's
// Generations (read from the index) lists what the directory holds,
// LoadGeneration and Load read the newest (6), and the session resumes:
// locked and saved again, generation 7, the index listing 6 and 7.
// Mutation caught: the prune at Lock not rewriting the index first
// (after the kill past the prune, Generations lists 1–3, gone, and misses
// 5 and 6). What a power loss could lose, a kill does not: that the index
// is synced (file, then directory) before the prune is checked in the
// process, at the prune (mutation caught: the rewrite not synced).
// TestDirIndexKill covers the index under random kills.
func TestDirPruneAtLockKill(t *testing.T) {
	t.Run("synced", func(t *testing.T) {
		dir := t.TempDir()
		d := checkpoint.NewDir(dir, checkpoint.KeepAll())
		saveGens(t, d, "s", 1, 2, 3)
		stale := readFile(t, filepath.Join(dir, "s.session"))
		saveGens(t, d, "s", 4, 5, 6)
		writeMarker(t, dir, "s", stale)
		l := checkpoint.NewDir(dir, checkpoint.Keep(2))
		var synced []string // "file" or "dir", in order
		checkpoint.SetSync(l, func(f *os.File) error {
			kind := "file"
			if fi, err := f.Stat(); err == nil && fi.IsDir() {
				kind = "dir"
			}
			synced = append(synced, kind+" "+filepath.Base(f.Name()))
			return f.Sync()
		})
		reached := false
		checkpoint.SetSaveHook(l, func(stage string) error {
			if stage != "lock prune" {
				return nil
			}
			reached = true
			if got := indexOnDisk(t, dir, "s"); !slices.Contains(got, 6) {
				t.Errorf("at the prune, the index names %v: not 6", got)
			}
			i := slices.IndexFunc(synced, func(s string) bool { return strings.HasPrefix(s, "file .s.") })
			if i < 0 || !slices.ContainsFunc(synced[i:], func(s string) bool { return strings.HasPrefix(s, "dir ") }) {
				t.Errorf("at the prune, the syncs were %v: want the index's file, then the directory", synced)
			}
			return nil
		})
		_, release, err := l.Lock(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		release()
		if !reached {
			t.Fatal("the prune at Lock was not reached")
		}
	})
	for _, stage := range []string{"lock prune", "lock pruned"} {
		t.Run(strings.ReplaceAll(stage, " ", "_"), func(t *testing.T) {
			dir := t.TempDir()
			d := checkpoint.NewDir(dir, checkpoint.KeepAll())
			saveGens(t, d, "s", 1, 2, 3)
			stale := readFile(t, filepath.Join(dir, "s.session"))
			saveGens(t, d, "s", 4, 5, 6)
			writeMarker(t, dir, "s", stale) // names 1–3: 4–6 by name

			cmd := exec.Command(os.Args[0], "-test.run=^TestPruneLockHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"=prunelock", "HELPER_DIR="+dir, "HELPER_STAGE="+stage)
			out, _ := cmd.Output()
			if !strings.Contains(string(out), "reached\n") {
				t.Fatalf("the helper did not reach %q: %q", stage, out)
			}
			want := []uint64{1, 2, 3, 4, 5, 6}
			if stage == "lock pruned" {
				want = []uint64{5, 6}
			}
			if truth := truthOf(t, dir, "s"); !slices.Equal(truth, want) {
				t.Fatalf("the directory holds %v, want %v", truth, want)
			}
			if got, _ := gensOf(t, checkpoint.NewDir(dir), "s"); !slices.Equal(got, want) {
				t.Errorf("after a kill at %q: Generations from the index = %v, the directory holds %v", stage, got, want)
			}
			r := checkpoint.NewDir(dir)
			if c, err := r.LoadGeneration(ctx, "s", 6); err != nil || c.Generation != 6 {
				t.Errorf("LoadGeneration(6): %v, %v", c, err)
			}
			if c, err := r.Load(ctx, "s"); err != nil || c.Generation != 6 {
				t.Errorf("Load: %v, %v; want generation 6", c, err)
			}
			// Resumed: locked (the prune completed), saved on.
			w := checkpoint.NewDir(dir, checkpoint.Keep(2))
			token, release, err := w.Lock(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			c := checkpointtest.Checkpoint("s", 0)
			c.Token = token
			if err := w.Save(ctx, c); err != nil {
				t.Fatal(err)
			}
			release()
			if got, want := mustGens(t, dir, "s"), []uint64{6, 7}; !slices.Equal(got, want) {
				t.Errorf("resumed: Generations = %v, want %v", got, want)
			}
			if got := truthOf(t, dir, "s"); !slices.Equal(got, []uint64{6, 7}) {
				t.Errorf("resumed: the directory holds %v, want [6 7]", got)
			}
		})
	}
}
