//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// isolate makes the cancellation of cmd's context kill the command (process
// groups are a Unix notion; its children may survive elsewhere).
func isolate(cmd *exec.Cmd) {}

// killGroup does nothing where there are no process groups.
func killGroup(cmd *exec.Cmd) {}

func signalName(state *os.ProcessState) string { return "" }
