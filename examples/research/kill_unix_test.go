//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/examples/internal/e2etest"
)

// TestKillLeavesNoAgent: research killed outright (kill -9) takes its
// external agents and their children with it (rule: no external command
// outlives its orchestrator; catches an agent started without xcmd's
// watchdog — xcmd.Run replaced by cmd.Run in study/external.go — whose
// child sleep the parent-death signal of sh -c does not reach).
func TestKillLeavesNoAgent(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to list a process group's members")
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := binaryCommand(append(scenarioArgs(t, "5_early", t.TempDir(), "--max-iterations", "1"),
		"--agent-cmd", "explore=testdata/agents/orphan.sh")...)
	cmd.Env = append(cmd.Env, "ORPHAN_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pidfile string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if pids, _ := filepath.Glob(filepath.Join(dir, "*.pid")); len(pids) > 0 {
			pidfile = pids[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no agent started")
		}
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	e2etest.KillLeavesNoGroup(t, cmd, child, "the agent's group")
}
