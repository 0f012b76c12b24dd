package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/refine-go/refine/examples/research/study"
)

// FuzzAgentFlag checks the --agent-cmd role=COMMAND configuration: an
// accepted value names a known role and a command.
func FuzzAgentFlag(f *testing.F) {
	for _, s := range []string{"citation=python3 agent.py", "wizard=x", "citation", "explore= ", "=cmd", " pattern = a=b "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		a := agentFlags{}
		if err := a.Set(v); err != nil {
			if len(a) != 0 {
				t.Fatalf("a rejected value was kept: %v", a)
			}
			return
		}
		if len(a) != 1 {
			t.Fatalf("Set(%q) kept %d roles", v, len(a))
		}
		for role, cmd := range a {
			if !knownRole(role) || strings.TrimSpace(cmd) == "" {
				t.Fatalf("Set(%q) kept role %q, command %q", v, role, cmd)
			}
		}
	})
}

func knownRole(role string) bool {
	return slices.Contains(study.AgentRoles(), role)
}
