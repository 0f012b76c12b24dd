//go:build unix

package checkpoint_test

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// TestIndexHelperProcess is not a test: run by TestDirIndexKill as a child
// process (with helperEnv set to "index"), it saves generations of the
// session "k" for ever, as a loop does, taking the session's lock again
// every 7 saves, and asking for a generation 3 above the next on its
// second and fifth saves (a jump, whose index is synced first). It says "ready" once
// it has saved.
func TestIndexHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "index" {
		t.Skip("helper process for TestDirIndexKill")
	}
	d := checkpoint.NewDir(os.Getenv("HELPER_DIR"), checkpoint.Keep(2))
	said := false
	for round := 0; ; round++ {
		token, release, err := d.Lock(ctx, "k")
		if err != nil {
			os.Exit(2)
		}
		newest := uint64(0)
		if c, err := d.Load(ctx, "k"); err == nil {
			newest = c.Generation
		}
		for i := range 7 {
			c := checkpointtest.Checkpoint("k", 0)
			if i%3 == 1 {
				c.Generation = newest + 4
			}
			c.Token = token
			if err := d.Save(ctx, c); err != nil {
				os.Exit(3)
			}
			newest = max(newest+1, c.Generation)
			if !said {
				os.Stdout.WriteString("ready\n")
				said = true
			}
		}
		release()
	}
}

// TestDirIndexKill guards the index under kills (issue 31, item 10): a
// process saving (plain saves, jumps, locks that prune and rewrite the
// index) is SIGKILLed at a random instant, again and again in the same
// directory; after each kill, before anything repairs it, Generations read
// from the index lists exactly what the directory holds, and Load and
// LoadGeneration of each listed generation succeed. 50 kills (10 with
// -short); REFINE_INDEX_KILLS sets the number (1,000 for BENCHMARKS).
// Mutation caught: a save's index not naming the generation it is about
// to publish (a kill between a jump's rename and the next save's index
// leaves the jump unlisted: kill 1 of 100). A kill loses no write the
// process made, so what a power loss could reorder (the look-up by name,
// the jump's synced index) is TestDirIndexCrashStates' and
// TestDirIndexJumpSynced's.
func TestDirIndexKill(t *testing.T) {
	kills := 50
	if testing.Short() {
		kills = 10
	}
	if n, err := strconv.Atoi(os.Getenv("REFINE_INDEX_KILLS")); err == nil && n > 0 {
		kills = n
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIndexHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=index", "HELPER_DIR="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: the helper said %q, %v", i, line, err)
		}
		// The delay only spreads the kills over the child's saves; what
		// is checked does not depend on where they fall.
		time.Sleep(time.Duration(rng.IntN(15000)) * time.Microsecond)
		cmd.Process.Kill()
		cmd.Wait()

		got := mustGens(t, dir, "k")
		want := truthOf(t, dir, "k")
		if !slices.Equal(got, want) {
			t.Fatalf("kill %d: Generations from the index = %v, the directory holds %v", i, got, want)
		}
		d := checkpoint.NewDir(dir)
		for _, g := range got {
			if _, err := d.LoadGeneration(ctx, "k", g); err != nil {
				t.Fatalf("kill %d: generation %d: %v", i, g, err)
			}
		}
		if _, err := d.Load(ctx, "k"); err != nil {
			t.Fatalf("kill %d: Load: %v", i, err)
		}
	}
}
