package checkpoint_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv, when set in the environment, makes the test binary a helper
// process of the lock tests (see TestHelperProcess).
const helperEnv = "REFINE_CHECKPOINT_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		// A child process started by a lock test: run only the helper, and
		// without goleak (it is killed, never returns).
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
