//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/examples/internal/textfmt"
	"github.com/refine-go/refine/iterate"
)

// TestAgentReportsToTheEngine: each iteration charges the prompt's token
// estimate to the loop (Result.Usage.Tokens), also when the AI CLI fails,
// and a prompt over the token budget is warned about through the engine
// (a Warned event per iteration, before its AI CLI runs) and sent anyway.
func TestAgentReportsToTheEngine(t *testing.T) {
	prompts, err := filepath.Abs(filepath.Join("testdata", "prompts", "build"))
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := assemblePrompt(prompts, nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tokens := budget.EstimateTokens(prompt)
	// The AI CLI leaves a file named after its iteration, and says which it
	// was.
	const ran = `cat >/dev/null; : >ran.$AGENTLOOP_ITERATION; echo "iteration $AGENTLOOP_ITERATION <done>"`
	over := fmt.Sprintf("Prompt exceeds token budget: %s > 50", textfmt.Tokens(int64(tokens)))

	tests := []struct {
		name         string
		aiCmd        string
		tokenBudget  int
		wantWarnings []string
		wantFailed   bool
	}{
		{name: "seed004_prompt_within_budget_charged", aiCmd: ran, tokenBudget: 100000},
		{name: "seed004_prompt_over_budget_warned_and_sent", aiCmd: ran, tokenBudget: 50,
			wantWarnings: []string{"1: " + over, "2: " + over}},
		{name: "seed004_failed_ai_cli_still_charged", aiCmd: ran + "; exit 1", tokenBudget: 100000, wantFailed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			set := &settings{Procedure: "build", Workspace: ws, AICmd: tt.aiCmd, TokenBudget: tt.tokenBudget, Prompts: prompts}
			ag := &agent{set: set, log: zap.NewNop(), stdout: io.Discard, stderr: io.Discard}

			var mu sync.Mutex
			var warnings []string
			var failed bool
			observe := func(e iterate.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e := e.(type) {
				case iterate.Warned:
					// Reported at once: the iteration's AI CLI has not run.
					if _, err := os.Stat(filepath.Join(ws, fmt.Sprintf("ran.%d", e.Iteration()))); err == nil {
						t.Errorf("warning of iteration %d reported after its AI CLI ran", e.Iteration())
					}
					warnings = append(warnings, fmt.Sprintf("%d: %s", e.Iteration(), e.Message))
				case iterate.IterationEnded:
					failed = failed || e.Failed
				}
			}
			eng := iterate.New(iterate.Func(ag.iteration), iterate.WithMaxIterations(2), iterate.WithObserver(observe))
			res, err := eng.Run(context.Background(), loopState{})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got, want := res.Usage.Tokens, int64(2*tokens); got != want {
				t.Errorf("Result.Usage.Tokens = %d, want %d (two prompts of %d tokens)", got, want, tokens)
			}
			// The AI CLI's answer is the task's output, kept in each
			// iteration's record.
			for _, rec := range res.History.Recent[1:] {
				want := fmt.Sprintf("iteration %d <done>\n", rec.Iteration)
				if len(rec.TaskRuns) != 1 || rec.TaskRuns[0].Output != want {
					t.Errorf("iteration %d: task runs %+v, want one with the output %q", rec.Iteration, rec.TaskRuns, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tt.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if failed != tt.wantFailed {
				t.Errorf("an iteration failed: %v, want %v", failed, tt.wantFailed)
			}
		})
	}
}
