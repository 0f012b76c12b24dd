package study

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// TestSeed000RoleTable: seed 000's gap type → agent table (roles.go), as
// iterate.Adaptive plans with it: the role of each gap type, its agent and
// model, and the prompt template filled from the gap. (The table moved out
// of the engine; this is the engine's former TestAdaptiveSeed000RoleTable.)
func TestSeed000RoleTable(t *testing.T) {
	cov := gap.Gap{Kind: gap.Coverage, Target: "coverage", Focus: []string{"jwt.go", "middleware.go"}, Priority: gap.P1}
	evid := gap.Gap{Kind: gap.Evidence, Target: "finding-003", Priority: gap.P2}
	pat := gap.Gap{Kind: gap.Pattern, Target: "error handling", Priority: gap.P2}
	conf := gap.Gap{Kind: gap.ConflictingFindings, Target: "c1", Detail: "SQL Server vs PostgreSQL", Priority: gap.P2}
	sec := gap.Gap{Kind: gap.Security, Target: "token storage", Priority: gap.P1}
	perf := gap.Gap{Kind: gap.Performance, Target: "cache", Priority: gap.P2}
	t1 := gap.Gap{Kind: gap.TestFailure, Target: "TestA", Detail: "expected 1, received 2", Priority: gap.P1, Severity: 0.9}
	t2 := gap.Gap{Kind: gap.ReviewRejected, Target: "review", Detail: "missing doc comment", Priority: gap.P1, Severity: 0.7}
	tests := []struct {
		gaps       []gap.Gap
		wantRoles  []iterate.RoleName
		wantAgent  agent
		wantPrompt string
	}{
		{[]gap.Gap{cov}, []iterate.RoleName{roleExplore}, agent{"ExploreAgent", "haiku"}, "Analyze ONLY these files: jwt.go, middleware.go."},
		{[]gap.Gap{evid}, []iterate.RoleName{roleCitation}, agent{"CitationAgent", "haiku"}, "For finding 'finding-003', locate exact code implementation"},
		{[]gap.Gap{pat}, []iterate.RoleName{rolePattern}, agent{"PatternAgent", "haiku"}, "Find 3+ concrete examples"},
		{[]gap.Gap{conf}, []iterate.RoleName{roleVerify}, agent{"PlanAgent", "sonnet"}, "Resolve conflict: SQL Server vs PostgreSQL."},
		{[]gap.Gap{sec}, []iterate.RoleName{roleSecurity}, agent{"SecurityAgent", "sonnet"}, "security implications of 'token storage'"},
		{[]gap.Gap{perf}, []iterate.RoleName{rolePerformance}, agent{"PerformanceAgent", "sonnet"}, "performance characteristics of 'cache'"},
		{[]gap.Gap{t1, t2}, []iterate.RoleName{roleImplement}, agent{"Implementer", "sonnet"}, "expected 1, received 2; missing doc comment"},
		// No actionable gap: the broad exploration.
		{nil, []iterate.RoleName{roleExplore}, agent{"ExploreAgent", "haiku"}, "Explore broadly for anything the previous iterations missed."},
	}
	for _, tt := range tests {
		name := "broad"
		if len(tt.gaps) > 0 {
			name = string(tt.gaps[0].Kind)
		}
		t.Run(name, func(t *testing.T) {
			h := &converge.History{MaxIterations: 4}
			h.Observe(gap.Assessment{}, tt.gaps)
			sit := &iterate.Situation{Iteration: 1, History: h}
			p, err := (&iterate.Adaptive{Roles: seed000Roles}).Plan(context.Background(), sit)
			if err != nil {
				t.Fatal(err)
			}
			var roles []iterate.RoleName
			for _, tk := range p.Tasks {
				roles = append(roles, tk.Role)
			}
			if diff := cmp.Diff(tt.wantRoles, roles); diff != "" {
				t.Fatalf("roles (-want +got):\n%s", diff)
			}
			if !strings.Contains(p.Tasks[0].Prompt, tt.wantPrompt) {
				t.Errorf("prompt %q lacks %q", p.Tasks[0].Prompt, tt.wantPrompt)
			}
			if got := agentOf(p.Tasks[0].Role); got != tt.wantAgent {
				t.Errorf("agent %+v, want %+v", got, tt.wantAgent)
			}
		})
	}
}
