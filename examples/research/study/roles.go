package study

import (
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// The worker roles of seed 000's agents: iterate.Adaptive's default roles,
// which it names in Task.Role.
const (
	roleExplore     = iterate.RoleExplore     // ExploreAgent: files, directories, flows
	roleCitation    = iterate.RoleCitation    // CitationAgent: evidence for a finding
	rolePattern     = iterate.RolePattern     // PatternAgent: examples of a pattern
	roleVerify      = iterate.RoleVerify      // PlanAgent: resolve conflicts
	roleSecurity    = iterate.RoleSecurity    // SecurityAgent
	rolePerformance = iterate.RolePerformance // PerformanceAgent
	roleImplement   = iterate.RoleImplement   // implementer: fix the output (seeds 001, 002)
)

// knownRoles are the roles an external command can play (Args.Agents).
var knownRoles = []string{string(roleExplore), string(roleCitation), string(rolePattern), string(roleVerify), string(roleSecurity), string(rolePerformance)}

// agent is the agent that plays a role: its name in the displays, the
// report and the log, and the model an external agent is told to use.
type agent struct{ Name, Model string }

// seed000Agents maps a role to seed 000's agent.
var seed000Agents = map[iterate.RoleName]agent{
	roleExplore:     {"ExploreAgent", "haiku"},
	roleCitation:    {"CitationAgent", "haiku"},
	rolePattern:     {"PatternAgent", "haiku"},
	roleVerify:      {"PlanAgent", "sonnet"},
	roleSecurity:    {"SecurityAgent", "sonnet"},
	rolePerformance: {"PerformanceAgent", "sonnet"},
	roleImplement:   {"Implementer", "sonnet"},
}

// agentOf returns the agent of a role; a role without one (a task planned
// without a role, an unknown role) is the ExploreAgent's.
func agentOf(role iterate.RoleName) agent {
	if a, ok := seed000Agents[role]; ok {
		return a
	}
	return seed000Agents[roleExplore]
}

// seed000Roles is seed 000's gap-kind → role table with its prompt
// templates, extended with the implementer for the quality triggers of
// seeds 001 and 002. iterate.Adaptive plans with it ({target}, {detail}
// and {focus} are filled from the gap).
//
// The citation and pattern roles, like the implementer, are grouped: one
// agent takes every low-confidence finding of the iteration, so that twenty
// weak findings do not need seven iterations of three agents each. The
// explorer, verifier, security and performance roles get one agent per gap.
// The kind "" is the broad exploration of an iteration without actionable
// gaps (and of the kinds the table does not name).
var seed000Roles = func() iterate.Roles {
	explore := iterate.Role{Name: roleExplore,
		Prompt: "Analyze ONLY these files: {focus}. Provide patterns and connections to previously analyzed code."}
	citation := iterate.Role{Name: roleCitation, Group: true,
		Prompt: "For finding '{target}', locate exact code implementation with file:line citations and code snippets."}
	implement := iterate.Role{Name: roleImplement, Group: true,
		Prompt: "Address the identified issues: {detail}"}
	roles := iterate.Roles{
		"": {Name: roleExplore,
			Prompt: "Explore broadly for anything the previous iterations missed."},
		gap.Coverage:   explore,
		gap.Confidence: citation,
		gap.Evidence:   citation,
		gap.Pattern: {Name: rolePattern, Group: true,
			Prompt: "Deep dive into '{target}' pattern. Find 3+ concrete examples with similarities and variations."},
		gap.ConflictingFindings: {Name: roleVerify,
			Prompt: "Resolve conflict: {detail}. Analyze all relevant sources and provide ground truth with comprehensive citations."},
		gap.MissingContext: {Name: roleExplore,
			Prompt: "Trace {target}. Map the complete flow with file:line references."},
		gap.UnansweredQuestion: {Name: roleExplore,
			Prompt: "Answer the critical question '{target}' with file:line evidence."},
		gap.Security: {Name: roleSecurity,
			Prompt: "Analyze security implications of '{target}'. Check for vulnerabilities, best practices, and provide security recommendations."},
		gap.Performance: {Name: rolePerformance,
			Prompt: "Analyze performance characteristics of '{target}'. Identify bottlenecks, inefficiencies, and optimization opportunities."},
	}
	for _, k := range []gap.Kind{gap.ValidationFailure, gap.LowConfidence, gap.IncompleteOutput, gap.ExplicitFeedback,
		gap.Hallucination, gap.RequirementUnmet, gap.QualityThreshold, gap.UserRejection, gap.TestFailure, gap.ReviewRejected} {
		roles[k] = implement
	}
	return roles
}()
