//go:build !unix

package main

import (
	"context"
	"os/exec"
	"runtime"
)

// shellCommand runs line with the system's shell.
func shellCommand(ctx context.Context, line string) *exec.Cmd {
	if runtime.GOOS == "windows" {
		return exec.CommandContext(ctx, "cmd", "/C", line)
	}
	return exec.CommandContext(ctx, "sh", "-c", line)
}
