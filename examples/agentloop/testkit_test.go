//go:build unix

package main

// A recorded AI CLI run, replayed and crashed with iteratetest's kit: the
// loop of agentloop (iterate.Func(agent.iteration), its convergence
// policy and Persist flags) ran once with testdata/fakecli.sh as the AI
// CLI, and testdata/aicli.cassette.json holds what each iteration's AI CLI
// did: the state it returned, the tokens and cost it reported, its answer
// (with the API key it printed scrubbed). The tests replay it without
// running the CLI. Record it again with:
//
//	REFINE_RECORD=1 go test -run 'TestAICLI' ./examples/agentloop/

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
	"github.com/refine-go/refine/iterate/iteratetest"
)

const (
	aiCassette = "testdata/aicli.cassette.json"
	fakeAPIKey = "sk-ant-fake-0042"
)

// recordedAgent returns agentloop's work function behind the cassette,
// and the workspace the AI CLI would change. The AI CLI prints Claude
// Code's JSON on iteration 1, plain text and the API key it used on 2,
// Codex's events on 3, and appends a line to calls.txt each time it runs.
func recordedAgent(t *testing.T) (iterate.Worker[loopState], string) {
	fake, err := filepath.Abs(filepath.Join("testdata", "fakecli.sh"))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	set := &settings{Procedure: "build", Workspace: ws, TokenBudget: 100000, Prompts: "testdata/prompts/build",
		AICmd: `sh "$FAKECLI"; [ "$AGENTLOOP_ITERATION" != 2 ] || echo "(used key $FAKE_API_KEY)"`}
	env := append(os.Environ(), "FAKECLI="+fake, "FAKE_API_KEY="+fakeAPIKey, "FAKECLI_TOUCH=calls.txt",
		"FAKECLI_OUTPUT_1=claude.json", "FAKECLI_OUTPUT_2=plain.txt", "FAKECLI_OUTPUT_3=codex.jsonl")
	ag := &agent{set: set, log: zap.NewNop(), env: env, stdout: io.Discard, stderr: io.Discard}
	scrub := iteratetest.Scrub(func(s string) string { return strings.ReplaceAll(s, fakeAPIKey, "sk-ant-REDACTED") })
	return iteratetest.Cassette(t, aiCassette, iterate.Worker[loopState](iterate.Func(ag.iteration)), scrub), ws
}

// aiLoop is agentloop's loop of three iterations over w (see runLoop), with
// the kit's options last.
func aiLoop(w iterate.Worker[loopState]) func(opts ...iterate.Option) iterate.Engine[loopState] {
	return func(opts ...iterate.Option) iterate.Engine[loopState] {
		return iterate.New(w, append([]iterate.Option{iterate.WithSession("build"), iterate.WithMaxIterations(3),
			iterate.WithConvergence(converge.Any(converge.Failures{}, converge.IterationLimit{})),
			iterate.WithCheckpointer(new(checkpoint.Memory), iterate.Cleanup)}, opts...)...)
	}
}

// TestAICLIReplay: the recorded run replays without the AI CLI (no line in
// calls.txt), with the spending each CLI reported on the books and the
// answers it gave, the API key scrubbed from the cassette and the replay.
// (Mutations caught: a replay that runs the CLI — calls.txt exists; a
// cassette that does not scrub — the key in the file.)
func TestAICLIReplay(t *testing.T) {
	w, ws := recordedAgent(t)
	res, err := aiLoop(w)().Run(context.Background(), loopState{})
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(iteratetest.RecordEnv) != "" {
		return // a live run: the CLI ran, and its answers are whole
	}
	if _, err := os.Stat(filepath.Join(ws, "calls.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the replay ran the AI CLI (calls.txt: %v)", err)
	}
	const claudeIn, claudeOut = 31 + 18342 + 120517, 2874 // testdata/cli/claude.json
	if res.Status != iterate.MaxIterations || res.State.Succeeded != 3 || res.Usage.InputTokens < claudeIn ||
		res.Usage.OutputTokens < claudeOut || res.Usage.Cost != 0.18420315 {
		t.Errorf("replay: %s, %d succeeded, usage %+v; want max_iterations, 3, Claude's spending on the books", res.Status, res.State.Succeeded, res.Usage)
	}
	out := res.History.Recent[2].TaskRuns[0].Output
	if !strings.Contains(out, "(used key sk-ant-REDACTED)") {
		t.Errorf("iteration 2's answer %q, want the scrubbed key", out)
	}
	data, err := os.ReadFile(aiCassette)
	if err != nil || strings.Contains(string(data), fakeAPIKey) {
		t.Errorf("%s: %v, holds the API key: %t", aiCassette, err, strings.Contains(string(data), fakeAPIKey))
	}
}

// TestAICLICrash: agentloop's loop, replayed from the cassette, killed at
// every boundary of its saves and resumed, ends as the uninterrupted run.
func TestAICLICrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process per boundary")
	}
	w, _ := recordedAgent(t)
	iteratetest.Crash(t, aiLoop(w), loopState{})
}
