// Package e2etest builds an example program once for its end-to-end tests.
package e2etest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// Main is the TestMain of an example's tests: it builds the package in the
// current directory into a temporary directory as name (with $GO, or go),
// sets *binary to its path, runs the tests with goleak's leak check, removes
// the directory and exits with the tests' code.
func Main(m *testing.M, name string, binary *string) {
	dir, err := os.MkdirTemp("", name+"-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	*binary = filepath.Join(dir, name)
	if out, err := exec.Command(goTool, "build", "-o", *binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building %s: %v\n%s", name, err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The binary may run as another user (a test of a read-only state
	// directory drops privileges).
	_ = os.Chmod(dir, 0o755)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}
