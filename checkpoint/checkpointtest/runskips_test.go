package checkpointtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// envRunSkipsChild marks the child process of TestRunSkips.
const envRunSkipsChild = "REFINE_CHECKPOINTTEST_SKIPS_CHILD"

// TestRunSkipsChild is not a test: it is the child of TestRunSkips, which
// runs the suite over a store with only Save and Load.
func TestRunSkipsChild(t *testing.T) {
	if os.Getenv(envRunSkipsChild) == "" {
		t.Skip("helper process of TestRunSkips")
	}
	checkpointtest.Run(t, func(t *testing.T) checkpointtest.Store { return struct{ checkpointtest.Store }{new(checkpoint.Memory)} })
}

// TestRunSkips: Run skips the checks that do not apply to a store (no Lock,
// Remove, Sessions or SaveFrom) and passes the others, as the test binary's
// -v output shows (a test cannot read its subtests' statuses; this re-runs
// the binary).
func TestRunSkips(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunSkipsChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envRunSkipsChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the suite over a Save and Load store: %v\n%s", err, out)
	}
	for _, want := range []string{
		"--- SKIP: TestRunSkipsChild/lock ", "--- SKIP: TestRunSkipsChild/remove ",
		"--- SKIP: TestRunSkipsChild/sessions ", "--- SKIP: TestRunSkipsChild/stream ",
		"--- PASS: TestRunSkipsChild/round_trip ", "--- PASS: TestRunSkipsChild/state_sizes ",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output has no %q:\n%s", want, out)
		}
	}
}
