//go:build !unix

package checkpoint_test

import "testing"

// envNobodyDir: see nobody_unix_test.go.
const envNobodyDir = "REFINE_NOBODY_DIR"

// runAsNobody skips t: there is no user to switch to here.
func runAsNobody(t *testing.T, test string, env ...string) {
	t.Skip("no unprivileged user to run as on this system")
}
