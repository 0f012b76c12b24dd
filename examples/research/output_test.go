package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refine-go/refine/examples/research/study"
)

// allRoles returns --agent-cmd flags that give every role the command.
func allRoles(command string) []string {
	var args []string
	for _, role := range study.AgentRoles() {
		args = append(args, "--agent-cmd", role+"="+command)
	}
	return args
}

// emojiOf lists the display and report emoji.
var emojiOf = []string{"✅", "❌", "⚠️", "🔎", "🔄", "💾", "📊", "📋", "⏳"}

func hasEmoji(s string) bool {
	for _, e := range emojiOf {
		if strings.Contains(s, e) {
			return true
		}
	}
	return false
}

// TestEmoji: emoji only on a terminal (never through the tests' pipes) and
// never with NO_COLOR; plain words instead.
func TestEmoji(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		flag string
		want bool
	}{
		{"auto_off_a_terminal", nil, "--emoji=auto", false},
		{"never", nil, "--emoji=never", false},
		{"always", nil, "--emoji=always", true},
		{"no_color_wins", []string{"NO_COLOR=1"}, "--emoji=always", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, tt.env, scenarioArgs(t, "1_single", t.TempDir(), tt.flag)...)
			if r.code != exitOK {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if got := hasEmoji(r.stdout + r.stderr); got != tt.want {
				t.Errorf("emoji %t, want %t:\n%s", got, tt.want, r.stdout)
			}
			if !tt.want && (!hasLine(r.stdout, "Research Report") || !strings.Contains(r.stdout, "Overall: CONVERGED (all criteria met)")) {
				t.Errorf("plain displays missing:\n%s", r.stdout)
			}
		})
	}
}

// TestEveryAgentFailed: when every agent task failed, the report says so
// with the last error, and the exit code is not 0.
func TestEveryAgentFailed(t *testing.T) {
	args := append(scenarioArgs(t, "5_early", t.TempDir()), allRoles("testdata/agents/fail.sh")...)
	r := runBinary(t, nil, args...)
	if r.code == exitOK {
		t.Fatalf("exit 0 although every agent failed:\n%s", r.stdout)
	}
	want := "Every agent task failed (6 of 6); the last error: agent command for role explore (testdata/agents/fail.sh): exit status 1: boom: the agent crashed"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("report lacks %q:\n%s", want, r.stdout)
	}
	rep, _ := runJSON(t, nil, append(scenarioArgs(t, "5_early", t.TempDir()), allRoles("testdata/agents/fail.sh")...)...)
	if !rep.AllFailed || !strings.Contains(rep.LastError, "boom: the agent crashed") {
		t.Errorf("JSON report: all_failed %t, last_error %q", rep.AllFailed, rep.LastError)
	}
}

// TestLargeStderrIsCapped: a 50 MB line of stderr reaches the displays and
// the report as its last 512 bytes.
func TestLargeStderrIsCapped(t *testing.T) {
	args := append(scenarioArgs(t, "5_early", t.TempDir(), "--max-iterations", "1"), "--agent-cmd", "explore=testdata/agents/loud.sh")
	r := runBinary(t, nil, args...)
	if !strings.Contains(r.stdout, "exit status 1: …eeee") {
		t.Errorf("no failure with the end of stderr:\n%.3000s", r.stdout)
	}
	for line := range strings.Lines(r.stdout + r.stderr) {
		if len(line) > 2000 {
			t.Errorf("a line of %d bytes: %.200s…", len(line), line)
		}
	}
}

// TestTaskTimeoutEndsTheAgentsChildren: an agent that hangs is ended with
// every process it started when its task times out.
func TestTaskTimeoutEndsTheAgentsChildren(t *testing.T) {
	dir := t.TempDir()
	args := append(scenarioArgs(t, "5_early", t.TempDir(), "--max-iterations", "1", "--task-timeout", "2s"), "--agent-cmd", "explore=testdata/agents/orphan.sh")
	r := runBinary(t, []string{"ORPHAN_DIR=" + dir}, args...)
	if r.code == exitOK {
		t.Fatalf("exit 0:\n%s", r.stdout)
	}
	pids, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	if len(pids) == 0 {
		t.Fatalf("no agent started:\n%s", r.stdout)
	}
	for _, f := range pids {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("process %d outlived research", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestVersion(t *testing.T) {
	r := runBinary(t, nil, "--version")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "research ") || !strings.Contains(r.stdout, runtime.Version()) {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
}
