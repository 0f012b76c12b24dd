//go:build unix

package iterate_test

import "testing"

// TestCrashAnywhere is the kill harness (killharness_unix_test.go) without
// the task journal: a killed iteration is run again whole, and the loop still
// ends as an uninterrupted run, with the same usage on the books. 20 kills
// by default; $REFINE_CRASH_KILLS sets the count, $REFINE_KILL_SEED the
// schedule.
func TestCrashAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	runKillHarness(t, killNoJournal, killEnvInt(t, "REFINE_CRASH_KILLS", 20))
}
