package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/examples/research/study"
)

// TestSeed000Scenarios runs the five test scenarios of seed 000 on the
// fixture trees of testdata, with the real binary.
func TestSeed000Scenarios(t *testing.T) {
	tests := []struct {
		name       string
		dir        string
		extra      []string
		wantStatus string
		wantIters  int
		wantCode   int
		wantUnmet  []string
		wantTasks  []string // tasks (iteration:Agent/Gap) that must have run
		check      func(t *testing.T, rep *study.Report, r result)
	}{
		{
			name: "test1_single_iteration_to_convergence", dir: "1_single",
			wantStatus: "converged", wantIters: 1, wantCode: exitOK,
			wantTasks: []string{"1:ExploreAgent/Coverage", "1:ExploreAgent/Question"},
			check: func(t *testing.T, rep *study.Report, r result) {
				if rep.Convergence != "full" {
					t.Errorf("convergence = %q, want full", rep.Convergence)
				}
				if !hasLine(r.stderr, "Overall: ✅ CONVERGED (all criteria met)") {
					t.Errorf("no full-convergence display:\n%s", r.stderr)
				}
			},
		},
		{
			name: "test2_two_iterations_coverage_gap", dir: "2_coverage", extra: []string{"--files-per-task", "2"},
			wantStatus: "converged", wantIters: 2, wantCode: exitOK,
			wantTasks: []string{"2:ExploreAgent/Coverage", "2:ExploreAgent/Architecture"},
			check: func(t *testing.T, rep *study.Report, r result) {
				if len(rep.Metrics) != 2 || rep.Metrics[0].Coverage >= 0.70 || rep.Metrics[1].Coverage < 0.70 {
					t.Errorf("coverage per iteration = %+v, want below 0.70 then at least 0.70", rep.Metrics)
				}
				if rep.Metrics[1].NewFiles == 0 || rep.Metrics[1].CoverageGain <= 0 {
					t.Errorf("iteration 2 read no new files: %+v", rep.Metrics[1])
				}
				if !hasLine(r.stderr, "Coverage:             42%  ❌ (threshold: 70%) - BELOW") {
					t.Errorf("no failing coverage criterion in the display:\n%s", r.stderr)
				}
			},
		},
		{
			name: "test3_max_iterations_partial_convergence", dir: "3_partial", extra: []string{"--files-per-task", "1"},
			wantStatus: "max_iterations", wantIters: 4, wantCode: exitPartial,
			wantUnmet: []string{"coverage", "questions"},
			wantTasks: []string{"4:ExploreAgent/Coverage", "4:ExploreAgent/Question"},
			check: func(t *testing.T, rep *study.Report, r result) {
				if rep.Convergence != "partial" {
					t.Errorf("convergence = %q, want partial", rep.Convergence)
				}
				for i := 1; i < len(rep.Metrics); i++ {
					if rep.Metrics[i].Coverage <= rep.Metrics[i-1].Coverage {
						t.Errorf("iteration %d made no progress: %+v", i+1, rep.Metrics)
					}
				}
				var kinds []string
				for _, g := range rep.Gaps {
					kinds = append(kinds, string(g.Kind))
				}
				if !slices.Contains(kinds, "unanswered_question") || !slices.Contains(kinds, "coverage") {
					t.Errorf("open gaps %v, want the unanswered question and coverage listed", kinds)
				}
				if !hasLine(r.stderr, "⚠️  MAX ITERATIONS REACHED (4 of 4)") {
					t.Errorf("no max-iterations display:\n%s", r.stderr)
				}
				if rep.Questions[1].Status != "unanswered" {
					t.Errorf("question 2 = %q, want unanswered (the tree has no HTTP handler)", rep.Questions[1].Status)
				}
			},
		},
		{
			name: "test4_conflicting_findings_resolved", dir: "4_conflict", extra: []string{"--files-per-task", "2"},
			wantStatus: "converged", wantIters: 2, wantCode: exitOK,
			wantTasks: []string{"2:PlanAgent/Conflict"},
			check: func(t *testing.T, rep *study.Report, r result) {
				if len(rep.Conflicts) != 1 {
					t.Fatalf("conflicts = %+v, want 1", rep.Conflicts)
				}
				c := rep.Conflicts[0]
				if c.Iteration != 1 || !c.Resolved || c.ResolvedAt != 2 || !strings.HasPrefix(c.ResolvedBy, "PlanAgent 2.") {
					t.Errorf("conflict %+v, want found in iteration 1 and resolved by the PlanAgent in iteration 2", c)
				}
				if c.A.Source == c.B.Source {
					t.Errorf("both sides from %s, want two agents disagreeing", c.A.Source)
				}
				if !strings.Contains(c.A.Statement, "1024") || !strings.Contains(c.B.Statement, "512") {
					t.Errorf("conflict sides %q vs %q, want the two values of maxOpenHandles", c.A.Statement, c.B.Statement)
				}
				for _, want := range []string{"pool/limit_linux.go:6", "pool/limit_windows.go:7", "on windows", "linux"} {
					if !strings.Contains(c.Resolution, want) {
						t.Errorf("resolution %q does not mention %q", c.Resolution, want)
					}
				}
				if rep.Metrics[0].Confidence >= 0.80 {
					t.Errorf("iteration 1 confidence %.2f, want the conflict to hold it below 0.80", rep.Metrics[0].Confidence)
				}
			},
		},
		{
			name: "test5_early_termination", dir: "5_early",
			wantStatus: "early_exit", wantIters: 2, wantCode: exitOK,
			wantTasks: []string{"2:CitationAgent/Confidence", "2:PatternAgent/Pattern clarity"},
			check: func(t *testing.T, rep *study.Report, r result) {
				for _, want := range []string{"✨ High Confidence Reached (Iteration 2)", "(Skipped 2 potential iterations)",
					"Research quality is exceptionally high. Concluding early to save time."} {
					if !hasLine(r.stderr, want) {
						t.Errorf("no %q in the display:\n%s", want, r.stderr)
					}
				}
				if rep.Confidence < 0.90 || rep.Coverage < 0.85 {
					t.Errorf("coverage %.2f, confidence %.2f; want at least 0.85 and 0.90", rep.Coverage, rep.Confidence)
				}
				var pattern *study.Finding
				for i := range rep.Findings {
					if rep.Findings[i].Kind == study.KindPattern {
						pattern = &rep.Findings[i]
					}
				}
				if pattern == nil || pattern.Examples < 3 || len(pattern.Citations) < 3 {
					t.Errorf("pattern finding %+v, want three or more cited examples", pattern)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, r := runJSON(t, nil, scenarioArgs(t, tt.dir, t.TempDir(), tt.extra...)...)
			if r.code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			if rep.Status != tt.wantStatus || rep.Iterations != tt.wantIters {
				t.Fatalf("got %s after %d iterations (%s), want %s after %d", rep.Status, rep.Iterations, rep.Reason, tt.wantStatus, tt.wantIters)
			}
			var unmet []string
			for _, c := range rep.Unmet {
				unmet = append(unmet, c.Name)
			}
			if diff := cmp.Diff(tt.wantUnmet, unmet); diff != "" {
				t.Errorf("unmet criteria (-want +got):\n%s", diff)
			}
			got := roles(rep)
			for _, w := range tt.wantTasks {
				if !slices.Contains(got, w) {
					t.Errorf("no task %s; tasks: %v", w, got)
				}
			}
			for _, l := range rep.Log {
				if l.Iteration == 1 && l.Agent != "ExploreAgent" {
					t.Errorf("iteration 1 ran %s; the first iteration explores", l.Agent)
				}
			}
			if len(rep.Metrics) != rep.Iterations {
				t.Errorf("%d iteration metrics for %d iterations", len(rep.Metrics), rep.Iterations)
			}
			checkCitations(t, rep)
			tt.check(t, rep, r)
		})
	}
}

// TestSeed000AgentLimit: at most 3 agents per iteration, highest priority
// first; the default question has four P1 gaps at the start, so one is
// deferred.
func TestSeed000AgentLimit(t *testing.T) {
	r := runBinary(t, nil, scenarioArgs(t, "3_partial", t.TempDir(), "--files-per-task", "1", "--max-iterations", "1")...)
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "[4/") {
			t.Errorf("more than 3 agents: %s", l)
		}
	}
	rep, _ := runJSON(t, nil, "--state", t.TempDir(), "--max-iterations", "1")
	if n := len(rep.Log); n != 3 {
		t.Errorf("iteration 1 ran %d agents, want 3 (of 4 P1 gaps)", n)
	}
}

// TestStandardLibrary runs the default question on the real standard
// library: it must end converged, early or at the iteration limit, and every
// citation must name an existing line.
func TestStandardLibrary(t *testing.T) {
	rep, r := runJSON(t, nil, "--state", t.TempDir())
	switch rep.Status {
	case "converged", "early_exit", "max_iterations":
	default:
		t.Fatalf("status %s (%s); stderr:\n%s", rep.Status, rep.Reason, r.stderr)
	}
	if !strings.HasSuffix(filepath.ToSlash(rep.Root), "/src") || rep.TotalFiles < 1000 {
		t.Errorf("root %s with %d files; want GOROOT/src", rep.Root, rep.TotalFiles)
	}
	if len(rep.Questions) != 3 || len(rep.Findings) == 0 {
		t.Fatalf("questions %d, findings %d", len(rep.Questions), len(rep.Findings))
	}
	checkCitations(t, rep)
	// The answers name the definitions of package context.
	var cited []string
	for _, q := range rep.Questions {
		for _, a := range q.Answer {
			cited = append(cited, a.Citations...)
		}
	}
	if !slices.ContainsFunc(cited, func(c string) bool { return strings.HasPrefix(c, "context/context.go:") }) {
		t.Errorf("no answer cites context/context.go: %v", cited)
	}
}

// TestDisplays checks the progress and convergence displays and the text
// report of seed 000.
func TestDisplays(t *testing.T) {
	r := runBinary(t, nil, scenarioArgs(t, "2_coverage", t.TempDir(), "--files-per-task", "2")...)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := []string{
		"🔄 Iteration 1 - Refinement Analysis",
		"Gaps identified: 3",
		"Refinement agents: 3",
		"[1/3] ExploreAgent - ",
		"(Gap: Coverage)",
		"(Gap: Question)",
		"Running refinement agents in parallel... ⏳",
		"💾 Checkpoint saved: session ",
		"📊 Convergence Status (Iteration 1)",
		"Criteria Assessment:",
		"  Coverage:             42%  ❌ (threshold: 70%) - BELOW",
		"  Unresolved Conflicts: 0    ✅ (max: 2)",
		"  Critical Questions:   2/2  ✅ (all answered)",
		"Overall: NOT CONVERGED (2 criteria failing)",
		"Action: Continue to Iteration 2",
		"🔄 Iteration 2 - Refinement Analysis",
		"(Gap: Architecture)",
		"📊 Convergence Status (Iteration 2)",
		"Overall: ✅ CONVERGED (all criteria met)",
		"📋 Research Report",
		"Status: converged (FULL CONVERGENCE)",
		"Critical Questions",
		"✅ ANSWERED",
		"Findings by Category",
		"CRITICAL:",
		"Agent Contributions",
		"Iteration Metrics",
		"Total: 2 iterations",
	}
	for _, w := range want {
		if !hasLine(r.stdout, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", r.stdout)
	}
}

// TestDeterministic: two runs of the same research give the same report
// (but for the durations).
func TestDeterministic(t *testing.T) {
	a, _ := runJSON(t, nil, scenarioArgs(t, "4_conflict", t.TempDir(), "--files-per-task", "2")...)
	b, _ := runJSON(t, nil, scenarioArgs(t, "4_conflict", t.TempDir(), "--files-per-task", "2")...)
	if diff := cmp.Diff(a, b, ignoreTiming()); diff != "" {
		t.Errorf("reports differ (-first +second):\n%s", diff)
	}
}

func ignoreTiming() cmp.Option {
	return cmp.Options{
		cmpopts.IgnoreFields(study.Report{}, "StateDir"),
		cmpopts.IgnoreFields(study.IterationReport{}, "Seconds"),
		cmpopts.IgnoreFields(study.TotalsReport{}, "Seconds"),
		cmpopts.EquateEmpty(),
	}
}

// TestInterruptAndResume: Ctrl+C in the middle of iteration 2 saves the
// state after iteration 1 and exits 130; --resume continues and ends
// exactly where an uninterrupted run ends.
func TestInterruptAndResume(t *testing.T) {
	state := t.TempDir()
	// The citation agent of iteration 2 hangs until it is killed.
	args := scenarioArgs(t, "5_early", state)
	out := interruptInIteration2(t, args)
	for _, w := range []string{"⏸️  Interrupted after 1 completed iteration(s). State saved in " + state, "Resume with: research --root testdata/5_early/src"} {
		if !hasLine(out, w) {
			t.Errorf("no %q in:\n%s", w, out)
		}
	}
	if !strings.Contains(out, "--resume") {
		t.Errorf("the resume hint lacks --resume:\n%s", out)
	}

	resumed, rr := runJSON(t, nil, append(args, "--resume")...)
	if rr.code != exitOK {
		t.Fatalf("resume exit %d: %s", rr.code, rr.stderr)
	}
	if !hasLine(rr.stderr, "↩️  Resuming session research-") || !hasLine(rr.stderr, "after iteration 1 of 4") {
		t.Errorf("no resume display:\n%s", rr.stderr)
	}
	if strings.Contains(rr.stderr, "🔄 Iteration 1 ") {
		t.Errorf("the resumed run repeated iteration 1:\n%s", rr.stderr)
	}
	straight, _ := runJSON(t, nil, scenarioArgs(t, "5_early", t.TempDir())...)
	if diff := cmp.Diff(straight, resumed, ignoreTiming()); diff != "" {
		t.Errorf("interrupted+resumed run differs from an uninterrupted one (-straight +resumed):\n%s", diff)
	}

	// Resuming the finished session prints its report without iterating.
	again, ar := runJSON(t, nil, append(args, "--resume")...)
	if strings.Contains(ar.stderr, "Refinement Analysis") {
		t.Errorf("resuming a finished session iterated:\n%s", ar.stderr)
	}
	if again.Status != "early_exit" || again.Iterations != 2 || len(again.Findings) != len(straight.Findings) {
		t.Errorf("finished session: %s after %d iterations with %d findings", again.Status, again.Iterations, len(again.Findings))
	}
}

// TestInterruptedSessionNotice: starting over an interrupted session says
// so and points at --resume.
func TestInterruptedSessionNotice(t *testing.T) {
	state := t.TempDir()
	args := scenarioArgs(t, "5_early", state, "--max-iterations", "4")
	cmd := binaryCommand(append(args, "--agent-cmd", "citation=sleep 60")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	n := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Running refinement agents") {
			if n++; n == 2 {
				_ = cmd.Process.Signal(os.Interrupt)
			}
		}
	}
	_ = cmd.Wait()
	r := runBinary(t, nil, args...)
	if !hasLine(r.stdout, "was interrupted after iteration 1; starting over (use --resume to continue it)") {
		t.Errorf("no notice of the interrupted session:\n%s", r.stdout)
	}
}

// TestExternalAgent drives the citation role with an external command:
// the task arrives as JSON on stdin, the findings come back as JSON, and
// citations that do not exist are dropped.
func TestExternalAgent(t *testing.T) {
	dump := filepath.Join(t.TempDir(), "task.json")
	rep, r := runJSON(t, []string{"TASK_DUMP=" + dump}, scenarioArgs(t, "5_early", t.TempDir(), "--agent-cmd", "citation=testdata/agents/cite.sh")...)
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !hasLine(r.stderr, "CitationAgent (external: testdata/agents/cite.sh)") {
		t.Errorf("the display does not show the external agent:\n%s", r.stderr)
	}
	var ext *study.AgentLog
	for i := range rep.Log {
		if rep.Log[i].External {
			ext = &rep.Log[i]
		}
	}
	if ext == nil || ext.Agent != "CitationAgent" || ext.Enhanced == 0 || ext.Dropped == 0 {
		t.Fatalf("external agent log %+v, want enhanced findings and dropped citations", ext)
	}
	checkCitations(t, rep)
	if rep.Totals.Tokens != 1200 {
		t.Errorf("tokens %d, want the 1200 the agent reported", rep.Totals.Tokens)
	}

	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	var task study.AgentTask
	if err := json.Unmarshal(b, &task); err != nil {
		t.Fatalf("the task is not JSON: %v\n%s", err, b)
	}
	if task.Role != "citation" || task.Agent != "CitationAgent" || task.Iteration != 2 || len(task.Gaps) == 0 ||
		task.Question == "" || len(task.Questions) != 2 || len(task.Findings) == 0 || task.Prompt == "" || task.Root == "" {
		t.Errorf("task = %+v", task)
	}
}

// TestExternalAgentFailure: a failing agent marks its gap unresolved; the
// iteration goes on with the other agents.
func TestExternalAgentFailure(t *testing.T) {
	rep, r := runJSON(t, nil, scenarioArgs(t, "5_early", t.TempDir(), "--agent-cmd", "pattern=testdata/agents/fail.sh")...)
	if r.code != exitOK && r.code != exitPartial {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !hasLine(r.stderr, "PatternAgent failed: agent command for role pattern") || !hasLine(r.stderr, "(gap unresolved - agent failure)") {
		t.Errorf("no failure display:\n%s", r.stderr)
	}
	failed, others := 0, 0
	for _, l := range rep.Log {
		switch {
		case l.Agent == "PatternAgent" && strings.Contains(l.Error, "boom"):
			failed++
		case l.Iteration >= 2 && l.Error == "":
			others++
		}
	}
	if failed == 0 || others == 0 {
		t.Errorf("log %+v: want the failed pattern agent and agents that went on", rep.Log)
	}
	checkCitations(t, rep)
}

// TestUsage checks --help and the errors of bad flags and inputs.
func TestUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("question: What does the cache do?\nwhat: is this\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	vague := filepath.Join(dir, "vague.txt")
	if err := os.WriteFile(vague, []byte("question: What is it?\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"help", []string{"--help"}, exitOK, "-agent-cmd"},
		{"help_lists_every_flag", []string{"-h"}, exitOK, "-files-per-task"},
		{"unknown_flag", []string{"--nope"}, exitUsage, "flag provided but not defined"},
		{"bad_role", []string{"--agent-cmd", "wizard=x"}, exitUsage, `unknown role "wizard"`},
		{"bad_agent_syntax", []string{"--agent-cmd", "citation"}, exitUsage, "want role=COMMAND"},
		{"bad_iterations", []string{"--max-iterations", "0"}, exitUsage, "--max-iterations must be at least 1"},
		{"missing_root", []string{"--root", "testdata/none"}, exitUsage, "--root"},
		{"bad_question_file", []string{"--root", "testdata/1_single/src", "--questions", bad}, exitUsage, "bad.txt:2: unknown directive"},
		{"question_without_keywords", []string{"--root", "testdata/1_single/src", "--questions", vague}, exitUsage, "vague.txt:1: no keywords in the main question"},
		{"empty_question_file", []string{"--root", "testdata/1_single/src", "--questions", empty}, exitUsage, `empty.txt: no "question:" line`},
		{"nothing_relevant", []string{"--root", "testdata/3_partial/src", "--questions", "testdata/1_single/questions.txt"}, exitUsage, "nothing to research"},
		{"resume_without_checkpoint", []string{"--root", "testdata/1_single/src", "--questions", "testdata/1_single/questions.txt", "--state", t.TempDir(), "--resume"}, exitError, "no checkpoint of session"},
		{"extra_argument", []string{"stray"}, exitUsage, `unexpected argument "stray": research takes flags only`},
		{"bad_emoji", []string{"--emoji", "sometimes"}, exitUsage, "--emoji must be auto, always or never"},
		{"help_store", []string{"--help"}, exitOK, "-store"},
		{"bad_store", []string{"--store", "mysql://u:secret@db/x"}, exitUsage, `--store must be empty (the checkpoint directory, --state) or a postgres:// or postgresql:// URL, got "mysql://u@db/x"`},
		{"bad_store_path", []string{"--store", "/tmp/sessions"}, exitUsage, "--store must be empty"},
		{"store_and_state", []string{"--store", "postgres://localhost/x", "--state", t.TempDir()}, exitUsage, "--store and --state are exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, nil, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			if !strings.Contains(r.stderr+r.stdout, tt.want) {
				t.Errorf("output lacks %q:\n%s%s", tt.want, r.stdout, r.stderr)
			}
		})
	}
}

// interruptInIteration2 runs the binary with args, its citation agent
// hanging, sends SIGINT once iteration 2 runs its agents, and checks that it
// exits as interrupted. It returns what the run printed on stdout.
func interruptInIteration2(t *testing.T, args []string) string {
	t.Helper()
	cmd := binaryCommand(append(args, "--agent-cmd", "citation=sleep 60")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	inIteration2, signalled := false, false
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if strings.HasPrefix(line, "🔄 Iteration 2") {
			inIteration2 = true
		}
		if inIteration2 && !signalled && strings.HasPrefix(line, "Running refinement agents") {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			signalled = true
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want %d\nstdout:\n%s\nstderr:\n%s", err, exitInterrupted, out.String(), stderr.String())
	}
	return out.String()
}

// TestUnearnedAnswers (issue 23, item 8): findings whose names and doc
// comments match the questions, confident as they are, do not answer them
// unless the code they cite holds the evidence (the identifiers a question
// names, or its keywords in two files): the questions stay open and the
// research ends partial (exit 3), where it used to report every question
// answered and converge.
func TestUnearnedAnswers(t *testing.T) {
	t.Parallel()
	rep, r := runJSON(t, nil, scenarioArgs(t, "6_unearned", t.TempDir())...)
	if r.code != exitPartial || rep.Convergence != "partial" {
		t.Errorf("exit %d, convergence %q; want %d and partial\n%s", r.code, rep.Convergence, exitPartial, r.stderr)
	}
	for _, q := range rep.Questions {
		if q.Status == "answered" {
			t.Errorf("question %q answered by %+v", q.Text, q.Answer)
		}
	}
	// The findings are confident: the verdict is the evidence's, not the
	// confidence's.
	if rep.Confidence < 0.80 {
		t.Errorf("confidence %.2f: the scenario needs confident findings", rep.Confidence)
	}
}
