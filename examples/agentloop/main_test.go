package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// binary is the agentloop binary built for the tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentloop-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	binary = filepath.Join(dir, "agentloop")
	build := exec.Command(goTool, "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building agentloop: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The binary may run as another user (see TestPersistenceFailure).
	os.Chmod(dir, 0o755)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}
