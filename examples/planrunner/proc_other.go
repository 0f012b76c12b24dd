//go:build !unix

package main

import "os/exec"

// setProcessGroup does nothing where process groups are not available:
// cancellation kills the shell only.
func setProcessGroup(*exec.Cmd) {}
