package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/examples/internal/e2etest"
	"github.com/refine-go/refine/iterate"
)

// binary is the fixloop program built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) { e2etest.Main(m, "fixloop", &binary) }

// outcome is what one run of the program produced.
type outcome struct {
	stdout, stderr string
	code           int
}

// fixloop runs the program with args and stdin (a pipe, never a terminal)
// and extra environment variables.
func fixloop(t *testing.T, stdin string, env []string, args ...string) outcome {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	o := outcome{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		o.code = exitErr.ExitCode()
	default:
		t.Fatalf("running fixloop: %v", err)
	}
	return o
}

// line is one JSON line of the output.
type line struct {
	Decision          *decisionJSON   `json:"decision"`
	IterationDecision *reportJSON     `json:"iterationDecision"`
	Result            json.RawMessage `json:"result"`
}

type feedbackJSON struct {
	Summary         string   `json:"summary"`
	ActionableItems []string `json:"actionable_items"`
	Priority        string   `json:"priority"`
}

type decisionJSON struct {
	Action    string       `json:"action"`
	TaskID    string       `json:"task_id"`
	Iteration int          `json:"iteration"`
	Strategy  string       `json:"strategy"`
	Message   string       `json:"message"`
	Answer    string       `json:"answer"`
	Feedback  feedbackJSON `json:"feedback"`
	Reason    string       `json:"reason"`
	Context   struct {
		AttemptsSummary string `json:"attempts_summary"`
		PatternDetected string `json:"pattern_detected"`
		Diff            string `json:"diff"`
	} `json:"context"`
	Question string `json:"question"`
	Resume   string `json:"resume"`
}

type reportJSON struct {
	TaskID    string `json:"taskId"`
	OutputID  string `json:"outputId"`
	DecidedAt string `json:"decidedAt"`
	Status    string `json:"status"`
	Decision  struct {
		NeedsIteration bool   `json:"needsIteration"`
		Priority       string `json:"priority"`
	} `json:"decision"`
	Triggers []struct {
		Type     string  `json:"type"`
		Source   string  `json:"source"`
		Severity float64 `json:"severity"`
		Details  string  `json:"details"`
		Fixable  bool    `json:"fixable"`
	} `json:"triggers"`
	Strategy struct {
		Type          string `json:"type"`
		Modifications []struct {
			Type    string   `json:"type"`
			Targets []string `json:"targets"`
			Reason  string   `json:"reason"`
		} `json:"modifications"`
	} `json:"strategy"`
	Budget struct {
		MaxIterations       int   `json:"maxIterations"`
		CurrentIteration    int   `json:"currentIteration"`
		RemainingIterations int   `json:"remainingIterations"`
		TokenBudget         int64 `json:"tokenBudget"`
		UsedTokens          int64 `json:"usedTokens"`
		RemainingTokens     int64 `json:"remainingTokens"`
	} `json:"budget"`
	Assessment struct {
		Likelihood         *float64 `json:"likelihood"`
		ExpectedGain       *float64 `json:"expectedGain"`
		DiminishingReturns *bool    `json:"diminishingReturns"`
		Recommendation     string   `json:"recommendation"`
	} `json:"assessment"`
	NextSteps []string `json:"nextSteps"`
}

// parseLines decodes the JSON lines of --json output.
func parseLines(t *testing.T, stdout string) []line {
	t.Helper()
	var ls []line
	for l := range strings.SplitSeq(strings.TrimSpace(stdout), "\n") {
		if l == "" {
			continue
		}
		var x line
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("output line is not JSON: %v\n%s", err, l)
		}
		ls = append(ls, x)
	}
	return ls
}

// step is the gist of a decision: its action and iteration.
type step struct {
	Action    string
	Iteration int
}

func steps(ls []line) []step {
	var s []step
	for _, l := range ls {
		if l.Decision != nil {
			s = append(s, step{l.Decision.Action, l.Decision.Iteration})
		}
	}
	return s
}

func decisions(ls []line, action string) []*decisionJSON {
	var ds []*decisionJSON
	for _, l := range ls {
		if l.Decision != nil && l.Decision.Action == action {
			ds = append(ds, l.Decision)
		}
	}
	return ds
}

// report returns the report, the last line before the final result.
func report(t *testing.T, ls []line) *reportJSON {
	t.Helper()
	if len(ls) > 0 && ls[len(ls)-1].Result != nil {
		ls = ls[:len(ls)-1]
	}
	if len(ls) == 0 || ls[len(ls)-1].IterationDecision == nil {
		t.Fatalf("the last output line is no report: %+v", ls)
	}
	return ls[len(ls)-1].IterationDecision
}

// rendered is the feedback as the implementer reads it: the summary line,
// then one "- item" line per actionable item.
func rendered(f feedbackJSON) string {
	var b strings.Builder
	b.WriteString(f.Summary)
	for _, it := range f.ActionableItems {
		b.WriteString("\n- " + it)
	}
	return b.String()
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// sandbox is a copy of testdata/sandbox, the module fixloop fixes in the
// tests, in a directory of the test's own. Its go.mod is kept as go.mod.txt:
// a directory with a go.mod would be a module of its own, which the
// refine module's zip leaves out, and the tests run from the module cache
// too (.ci/releasecheck).
func sandbox(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sandbox")
	if err := copyTree("testdata/sandbox", dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "go.mod.txt"), filepath.Join(dir, "go.mod")); err != nil {
		t.Fatal(err)
	}
	// Files of the module cache are read-only: the copy is the test's to change.
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// savedState decodes the state of the session checkpointed in workdir.
func savedState(t *testing.T, workdir string) (*checkpoint.Checkpoint, state) {
	t.Helper()
	c, err := checkpoint.NewDir(filepath.Join(workdir, stateDir)).Load(context.Background(), "fixloop")
	if err != nil {
		t.Fatal(err)
	}
	var s state
	if err := json.Unmarshal(c.State, &s); err != nil {
		t.Fatal(err)
	}
	return c, s
}

// TestSeed002RetryRetryProceed: patches 01 and 02 fail, 03 passes; the
// decisions are retry, retry and proceed at iteration 3, with feedback that
// names the failing test, what it expected and what it received, bounded to
// 500 characters; the sandbox in testdata is left untouched.
func TestSeed002RetryRetryProceed(t *testing.T) {
	t.Parallel()
	src := sandbox(t)
	sandboxBefore := readFile(t, filepath.Join(src, "claims.go"))
	work := filepath.Join(t.TempDir(), "work")
	o := fixloop(t, "", nil, "--workdir", work, "--patches", "testdata/patches/converge", "--json", src)
	if o.code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	ls := parseLines(t, o.stdout)
	want := []step{{"retry", 2}, {"retry", 3}, {"proceed", 3}}
	if diff := cmp.Diff(want, steps(ls)); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}

	t.Run("seed002_feedback_names_test_expected_received", func(t *testing.T) {
		fb := decisions(ls, "retry")[1].Feedback
		wantItems := []string{`TestClaimsUserID: Claims(123, "ada")["userId"]: Expected: 123, Received: "123"`}
		if diff := cmp.Diff(wantItems, fb.ActionableItems); diff != "" {
			t.Errorf("actionable items (-want +got):\n%s", diff)
		}
		if fb.Priority != "high" {
			t.Errorf("priority = %q, want high", fb.Priority)
		}
	})
	t.Run("seed002_feedback_max_length_500", func(t *testing.T) {
		for _, d := range decisions(ls, "retry") {
			if n := len(rendered(d.Feedback)); n > 500 || n == 0 {
				t.Errorf("feedback of iteration %d is %d bytes, want 1..500", d.Iteration, n)
			}
		}
	})
	t.Run("seed002_proceed_message", func(t *testing.T) {
		p := decisions(ls, "proceed")[0]
		if p.Message != proceedMessage || p.TaskID != "sandbox" {
			t.Errorf("proceed = %+v", p)
		}
	})
	t.Run("working_copy_fixed_testdata_untouched", func(t *testing.T) {
		if diff := cmp.Diff(readFile(t, "testdata/patches/converge/03/claims.go"), readFile(t, filepath.Join(work, "claims.go"))); diff != "" {
			t.Errorf("working copy claims.go (-patch 03 +got):\n%s", diff)
		}
		if got := readFile(t, filepath.Join(src, "claims.go")); got != sandboxBefore {
			t.Error("the package's claims.go was modified")
		}
		if _, err := os.Stat(filepath.Join(src, stateDir)); err == nil {
			t.Error("a checkpoint directory appeared in the package")
		}
	})
	t.Run("attempt_log", func(t *testing.T) {
		c, s := savedState(t, work)
		if c.Status != string(iterate.Converged) {
			t.Errorf("checkpoint status = %q, want converged", c.Status)
		}
		var got []string
		for _, a := range s.Attempts {
			got = append(got, fmt.Sprintf("%d %s %s", a.Iteration, a.Source, strings.Join(a.Files, ",")))
		}
		want := []string{"1 patch 01 claims.go", "2 patch 02 claims.go", "3 patch 03 claims.go"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
		if s.Checks == nil || !s.Checks.passing() {
			t.Errorf("last checks = %+v, want passing", s.Checks)
		}
	})
}

// TestYAMLOutput: without --json the decisions are seed 002's YAML
// documents and the report seed 001's.
func TestYAMLOutput(t *testing.T) {
	t.Parallel()
	work := filepath.Join(t.TempDir(), "work")
	o := fixloop(t, "", nil, "--workdir", work, "--patches", "testdata/patches/converge", "--report", "--quiet", sandbox(t))
	if o.code != exitOK {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o.stderr != "" {
		t.Errorf("--quiet printed on stderr:\n%s", o.stderr)
	}
	for _, want := range []string{
		"decision:\n  action: \"retry\"\n  task_id: \"sandbox\"\n  iteration: 2\n",
		"decision:\n  action: \"proceed\"\n  task_id: \"sandbox\"\n  iteration: 3\n  message: \"Validation passed. Proceeding to next task.\"\n",
		"    actionable_items:\n      - \"TestClaimsUserID: ",
		"iterationDecision:\n  taskId: \"sandbox\"\n  outputId: \"attempt-3\"\n",
		"  decision:\n    needsIteration: false\n",
		"  triggers: []\n  strategy:\n    type: \"none\"\n",
		"  budget:\n    maxIterations: 3\n    currentIteration: 3\n    remainingIterations: 0\n",
		"  assessment:\n    likelihood: ",
		"    recommendation: \"accept\"\n",
		"  nextSteps:\n    - \"Proceed to the next task\"\n",
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, o.stdout)
		}
	}
	if n := strings.Count(o.stdout, "action: \"retry\""); n != 2 {
		t.Errorf("%d retry decisions, want 2", n)
	}
}

// TestSeed002EscalateAndResume: every patch of the first three attempts
// fails. The loop escalates at the iteration limit with the attempts
// summary, the pattern and a question, and exits 3 without an answer. A
// second process resumes from the checkpoint: without an answer it
// escalates again; with one, the answer reaches the next attempt (patch 04,
// which passes) under a fresh allowance of iterations.
func TestSeed002EscalateAndResume(t *testing.T) {
	t.Parallel()
	work := filepath.Join(t.TempDir(), "work")
	o := fixloop(t, "", nil, "--workdir", work, "--patches", "testdata/patches/escalate", "--json", "--report", sandbox(t))
	if o.code != exitEscalated {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	ls := parseLines(t, o.stdout)
	want := []step{{"retry", 2}, {"retry", 3}, {"escalate", 3}}
	if diff := cmp.Diff(want, steps(ls)); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}
	esc := decisions(ls, "escalate")[0]

	// The problem in the actionable form of the feedback: test, expected,
	// received.
	const problem = `TestClaimsUserID: Claims(123, "ada")["userId"]: Expected: 123, Received: "123"`
	t.Run("seed002_escalate_attempts_summary", func(t *testing.T) {
		lines := strings.Split(esc.Context.AttemptsSummary, "\n")
		if len(lines) != 3 {
			t.Fatalf("attempts summary has %d lines, want 3:\n%s", len(lines), esc.Context.AttemptsSummary)
		}
		for i, l := range lines {
			if p := fmt.Sprintf("Iteration %d: ", i+1); !strings.HasPrefix(l, p) || !strings.HasSuffix(l, " - "+problem) {
				t.Errorf("attempt line %q: want prefix %q and suffix %q", l, p, " - "+problem)
			}
		}
	})
	// Catches an escalation without the diff of what the attempts changed.
	t.Run("seed002_escalation_includes_diff", func(t *testing.T) {
		if !strings.HasPrefix(esc.Context.Diff, "--- a/claims.go\n+++ b/claims.go\n@@ ") {
			t.Errorf("escalation diff = %q, want the change to claims.go", esc.Context.Diff)
		}
	})
	t.Run("seed002_escalate_pattern_and_question", func(t *testing.T) {
		if esc.Context.PatternDetected != problem {
			t.Errorf("pattern = %q, want %q", esc.Context.PatternDetected, problem)
		}
		if !strings.Contains(esc.Question, "After 3 attempt(s), this problem persists: "+problem+".") || !strings.Contains(esc.Question, "?") {
			t.Errorf("question = %q", esc.Question)
		}
		if !strings.Contains(esc.Resume, "fixloop resume --workdir") {
			t.Errorf("resume hint = %q", esc.Resume)
		}
		if !strings.Contains(o.stderr, "escalated after 3 attempts") {
			t.Errorf("stderr lacks the escalation notice:\n%s", o.stderr)
		}
	})
	t.Run("seed001_report_escalated", func(t *testing.T) {
		r := report(t, ls)
		if !r.Decision.NeedsIteration || r.Status != "escalated" || r.Strategy.Type != "escalate" {
			t.Errorf("report decision = %+v, status %q, strategy %q", r.Decision, r.Status, r.Strategy.Type)
		}
		if len(r.Triggers) != 1 || r.Triggers[0].Type != "test_failure" || r.Triggers[0].Source != "test-runner" || !r.Triggers[0].Fixable {
			t.Errorf("triggers = %+v", r.Triggers)
		}
		if r.Budget.MaxIterations != 3 || r.Budget.CurrentIteration != 3 || r.Budget.RemainingIterations != 0 {
			t.Errorf("budget = %+v", r.Budget)
		}
	})

	// A second process, no answer (the --resume flag form): the same
	// escalation, exit 3 again, and the same report: the open gaps come
	// back with the checkpoint.
	o = fixloop(t, "", nil, "--resume", "--workdir", work, "--json", "--ask", "never", "--report")
	if o.code != exitEscalated {
		t.Fatalf("resume without answer: exit %d, want 3\n%s%s", o.code, o.stdout, o.stderr)
	}
	resumed := parseLines(t, o.stdout)
	if diff := cmp.Diff([]step{{"escalate", 3}}, steps(resumed)); diff != "" {
		t.Errorf("resume without answer (-want +got):\n%s", diff)
	}
	t.Run("seed001_report_after_resume_without_answer", func(t *testing.T) {
		r := report(t, resumed)
		if r.Status != "escalated" || len(r.Triggers) != 1 || r.Triggers[0].Type != "test_failure" ||
			r.Triggers[0].Details != `Claims(123, "ada")["userId"]: Expected: 123, Received: "123"` {
			t.Errorf("report: status %q, triggers %+v; want escalated with the open test failure", r.Status, r.Triggers)
		}
	})

	// A third process answers.
	o = fixloop(t, "", nil, "resume", "--workdir", work, "--answer", "use number", "--json")
	if o.code != exitOK {
		t.Fatalf("resume with answer: exit %d, want 0\n%s%s", o.code, o.stdout, o.stderr)
	}
	ls = parseLines(t, o.stdout)
	if diff := cmp.Diff([]step{{"retry", 4}, {"proceed", 4}}, steps(ls)); diff != "" {
		t.Fatalf("decisions after the answer (-want +got):\n%s", diff)
	}
	if got := decisions(ls, "retry")[0].Answer; got != "use number" {
		t.Errorf("retry answer = %q, want %q", got, "use number")
	}
	_, s := savedState(t, work)
	if len(s.Attempts) != 4 || s.Attempts[3].Answer != "use number" || s.Attempts[3].Source != "patch 04" {
		t.Errorf("attempt 4 = %+v, want patch 04 with the answer", s.Attempts[len(s.Attempts)-1])
	}
}

// TestAnswerInProcess: with --answer, or an answer typed on stdin (--ask
// always), the same process resumes after the escalation and succeeds; an
// empty answer stops with exit 3.
func TestAnswerInProcess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  []step
	}{
		{"answer_flag", "", []string{"--answer", "use number"}, exitOK,
			[]step{{"retry", 2}, {"retry", 3}, {"escalate", 3}, {"retry", 4}, {"proceed", 4}}},
		{"answer_on_stdin", "use number\n", []string{"--ask", "always"}, exitOK,
			[]step{{"retry", 2}, {"retry", 3}, {"escalate", 3}, {"retry", 4}, {"proceed", 4}}},
		{"empty_answer_stops", "\n", []string{"--ask", "always"}, exitEscalated,
			[]step{{"retry", 2}, {"retry", 3}, {"escalate", 3}}},
		{"stdin_not_a_terminal", "use number\n", nil, exitEscalated,
			[]step{{"retry", 2}, {"retry", 3}, {"escalate", 3}}},
		// Seed 002's auto_retry_on_test_fail off (issue 32): the first
		// failed attempt escalates, without a retry; the answer gets one
		// attempt, whose failure escalates again. Catches the setting
		// ignored, and an escalation repeated before the answer's attempt.
		{"no_auto_retry_on_test_fail", "", []string{"--auto-retry-on-test-fail=false", "--answer", "use number"}, exitEscalated,
			[]step{{"escalate", 1}, {"retry", 2}, {"escalate", 2}}},
		// The review approves every attempt of these patches: its setting
		// changes nothing.
		{"no_auto_retry_on_review_reject", "", []string{"--auto-retry-on-review-reject=false"}, exitEscalated,
			[]step{{"retry", 2}, {"retry", 3}, {"escalate", 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			work := filepath.Join(t.TempDir(), "work")
			args := append([]string{"--workdir", work, "--patches", "testdata/patches/escalate", "--json", "--quiet"}, tt.args...)
			o := fixloop(t, tt.stdin, nil, append(args, sandbox(t))...)
			if o.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", o.code, tt.code, o.stdout, o.stderr)
			}
			ls := parseLines(t, o.stdout)
			if diff := cmp.Diff(tt.want, steps(ls)); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			if tt.code == exitOK {
				if got := decisions(ls, "retry")[2].Answer; got != "use number" {
					t.Errorf("answer of attempt 4 = %q", got)
				}
			}
		})
	}
}

// TestSeed001ReportJSON: --report --json ends with seed 001's decision
// report, every field present.
func TestSeed001ReportJSON(t *testing.T) {
	t.Parallel()
	work := filepath.Join(t.TempDir(), "work")
	o := fixloop(t, "", nil, "--workdir", work, "--patches", "testdata/patches/converge", "--json", "--report", "--token-budget", "100000", sandbox(t))
	if o.code != exitOK {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	r := report(t, parseLines(t, o.stdout))
	if r.TaskID != "sandbox" || r.OutputID != "attempt-3" || r.DecidedAt == "" || r.Status != "converged" {
		t.Errorf("report header = %q %q %q %q", r.TaskID, r.OutputID, r.DecidedAt, r.Status)
	}
	if r.Decision.NeedsIteration || r.Decision.Priority == "" || len(r.Triggers) != 0 || r.Strategy.Type != "none" {
		t.Errorf("report decision = %+v, triggers %+v, strategy %q", r.Decision, r.Triggers, r.Strategy.Type)
	}
	b := r.Budget
	if b.MaxIterations != 3 || b.CurrentIteration != 3 || b.RemainingIterations != 0 || b.TokenBudget != 100000 ||
		b.UsedTokens <= 0 || b.RemainingTokens != b.TokenBudget-b.UsedTokens {
		t.Errorf("budget = %+v", b)
	}
	a := r.Assessment
	if a.Likelihood == nil || a.ExpectedGain == nil || a.DiminishingReturns == nil || a.Recommendation != "accept" {
		t.Errorf("assessment = %+v", a)
	}
	if len(r.NextSteps) == 0 {
		t.Error("no next steps")
	}
}

// unformatted is patch 03 of the converge scenario with its indentation
// broken: it passes the tests but not gofmt. (It is written by the test, so
// that the repository itself stays gofmt-clean.)
const unformatted = `package sandbox

// Claims returns the claims of the login token of a user.
func Claims(userID int, name string) map[string]any {
        return map[string]any{"userId": userID,"name": name}
}

// Greeting returns the greeting shown after a login.
func Greeting(name string) string { return "Hello, " + name + "!" }
`

// TestBuiltinReviewRejectsUnformatted: a patch that passes the tests but is
// not gofmt-formatted is rejected by the built-in review; the retry's
// feedback says so and the formatted patch proceeds.
func TestBuiltinReviewRejectsUnformatted(t *testing.T) {
	t.Parallel()
	patches := t.TempDir()
	writeFile(t, filepath.Join(patches, "01", "claims.go"), unformatted)
	writeFile(t, filepath.Join(patches, "02", "claims.go"), readFile(t, "testdata/patches/converge/03/claims.go"))
	work := filepath.Join(t.TempDir(), "work")
	o := fixloop(t, "", nil, "--workdir", work, "--patches", patches, "--json", sandbox(t))
	if o.code != exitOK {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	ls := parseLines(t, o.stdout)
	if diff := cmp.Diff([]step{{"retry", 2}, {"proceed", 2}}, steps(ls)); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}
	want := []string{"claims.go: not gofmt-formatted (run gofmt -w claims.go)"}
	if diff := cmp.Diff(want, decisions(ls, "retry")[0].Feedback.ActionableItems); diff != "" {
		t.Errorf("feedback items (-want +got):\n%s", diff)
	}
	if !strings.Contains(o.stderr, "review reject") {
		t.Errorf("stderr lacks the rejected review:\n%s", o.stderr)
	}
}

// TestReviewerCommand: a reviewer command that exits 1 rejects with its
// output lines as issues.
func TestReviewerCommand(t *testing.T) {
	t.Parallel()
	patches := t.TempDir()
	fixed := readFile(t, "testdata/patches/converge/03/claims.go")
	writeFile(t, filepath.Join(patches, "01", "claims.go"), fixed+"\n// TODO: audit the claims\n")
	writeFile(t, filepath.Join(patches, "02", "claims.go"), fixed)
	reviewer := `if grep -q TODO claims.go; then echo "claims.go: resolve the TODO before merging"; exit 1; fi`
	work := filepath.Join(t.TempDir(), "work")
	o := fixloop(t, "", nil, "--workdir", work, "--patches", patches, "--reviewer-cmd", reviewer, "--json", sandbox(t))
	if o.code != exitOK {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	ls := parseLines(t, o.stdout)
	if diff := cmp.Diff([]step{{"retry", 2}, {"proceed", 2}}, steps(ls)); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"claims.go: resolve the TODO before merging"}, decisions(ls, "retry")[0].Feedback.ActionableItems); diff != "" {
		t.Errorf("feedback items (-want +got):\n%s", diff)
	}
}

// TestImplementerCommand: the implementer command reads the synthesised
// feedback on stdin (and the answer after an escalation), and its changes
// are checked like a patch's.
func TestImplementerCommand(t *testing.T) {
	t.Parallel()
	logDir := t.TempDir()
	env := []string{"FIXLOOP_TEST_LOG=" + logDir, "FIXLOOP_TEST_PATCHES=" + abs(t, "testdata/patches/escalate")}
	work := filepath.Join(t.TempDir(), "work")
	cmd := "bash " + shellQuote(abs(t, "testdata/implementer.sh"))
	o := fixloop(t, "", env, "--workdir", work, "--implementer-cmd", cmd, "--answer", "use number", "--json", sandbox(t))
	if o.code != exitOK {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	want := []step{{"retry", 2}, {"retry", 3}, {"escalate", 3}, {"retry", 4}, {"proceed", 4}}
	if diff := cmp.Diff(want, steps(parseLines(t, o.stdout))); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}
	in1 := readFile(t, filepath.Join(logDir, "input-1.txt"))
	for _, want := range []string{
		`TestClaimsUserID: Claims(123, "ada")["userId"]: Expected: 123, Received: "123"`,
		`TestClaimsName: Expected: "ada", Received: ""`,
		`TestGreeting: Expected: "Hello, ada!", Received: "Hello ada"`,
	} {
		if !strings.Contains(in1, want) {
			t.Errorf("input of attempt 1 lacks %q:\n%s", want, in1)
		}
	}
	if n := len(strings.TrimSpace(in1)); n > 500 {
		t.Errorf("input of attempt 1 is %d bytes, want ≤ 500", n)
	}
	if in4 := readFile(t, filepath.Join(logDir, "input-4.txt")); !strings.HasSuffix(in4, "Answer from the human: use number\n") {
		t.Errorf("input of attempt 4 lacks the answer:\n%s", in4)
	}
	c, s := savedState(t, work)
	if a := s.Attempts[0]; a.Source != "implementer" || cmp.Diff([]string{"claims.go"}, a.Files) != "" || !strings.Contains(a.Output, "rewrote claims.go") {
		t.Errorf("attempt 1 = %+v", a)
	}
	// The implementer's output is its task's in the session's history
	// (what inspect and iterate/view show under the iteration).
	rep, err := iterate.Inspect(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range rep.History.Recent[1:] {
		if len(rec.TaskRuns) != 1 || !strings.Contains(rec.TaskRuns[0].Output, "rewrote claims.go") {
			t.Errorf("iteration %d: task runs %+v, want the implementer's output", rec.Iteration, rec.TaskRuns)
		}
	}
}

// TestSeed002FeedbackBoundedWithManyFailures: with many failing tests the
// feedback given to the implementer stays within 500 bytes and starts with
// the most severe failure's name, expected and received values.
func TestSeed002FeedbackBoundedWithManyFailures(t *testing.T) {
	t.Parallel()
	pkg := t.TempDir()
	writeFile(t, filepath.Join(pkg, "go.mod"), "module many\n\ngo 1.25\n")
	writeFile(t, filepath.Join(pkg, "many.go"), "package many\n\n// Double doubles n (wrongly).\nfunc Double(n int) int { return n }\n")
	var tests strings.Builder
	tests.WriteString("package many\n\nimport \"testing\"\n")
	for i := range 30 {
		fmt.Fprintf(&tests, "\nfunc TestDoubleOfAVeryLongNamedValue%02d(t *testing.T) {\n\tif got := Double(%d); got != %d {\n\t\tt.Errorf(\"Double(%d) = %%d, want %%d\", got, %d)\n\t}\n}\n", i, i+1, 2*(i+1), i+1, 2*(i+1))
	}
	writeFile(t, filepath.Join(pkg, "many_test.go"), tests.String())
	logDir := t.TempDir()
	script := filepath.Join(t.TempDir(), "record.sh")
	writeFile(t, script, "cat > \"$FIXLOOP_TEST_LOG/input-$FIXLOOP_ITERATION.txt\"\n")
	work := filepath.Join(t.TempDir(), "work")
	o := fixloop(t, "", []string{"FIXLOOP_TEST_LOG=" + logDir}, "--workdir", work, "--implementer-cmd", "sh "+shellQuote(script),
		"--max-iterations", "1", "--json", "--quiet", "--ask", "never", pkg)
	if o.code != exitEscalated {
		t.Fatalf("exit %d, want 3\n%s%s", o.code, o.stdout, o.stderr)
	}
	in := strings.TrimSuffix(readFile(t, filepath.Join(logDir, "input-1.txt")), "\n")
	if len(in) > 500 {
		t.Errorf("feedback is %d bytes, want ≤ 500:\n%s", len(in), in)
	}
	if !strings.Contains(in, "\n- TestDoubleOfAVeryLongNamedValue00: Double(1): Expected: 2, Received: 1") {
		t.Errorf("feedback lacks the first failure:\n%s", in)
	}
}

// TestErrors: usage mistakes exit 2, failures exit 1, --help exits 0 and
// explains every flag.
func TestErrors(t *testing.T) {
	t.Parallel()
	sb := sandbox(t)
	full := filepath.Join(t.TempDir(), "full")
	writeFile(t, filepath.Join(full, "x.txt"), "x")
	onePatch := t.TempDir()
	writeFile(t, filepath.Join(onePatch, "01", "claims.go"), readFile(t, "testdata/patches/converge/01/claims.go"))
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no_package", []string{"--patches", "testdata/patches/converge"}, exitUsage, "missing the package directory to fix"},
		{"extra_argument", []string{"--patches", "testdata/patches/converge", sb, "extra"}, exitUsage, fmt.Sprintf("unexpected argument \"extra\" after the package directory %q", sb)},
		{"no_implementer", []string{sb}, exitUsage, "need --patches or --implementer-cmd"},
		{"both_implementers", []string{"--patches", "p", "--implementer-cmd", "true", sb}, exitUsage, "exclude each other"},
		{"bad_ask", []string{"--ask", "sometimes", "--patches", "p", sb}, exitUsage, "--ask must be"},
		{"negative_max", []string{"--max-iterations", "-1", "--patches", "p", sb}, exitUsage, "--max-iterations"},
		{"unknown_flag", []string{"--bogus"}, exitUsage, "flag provided but not defined"},
		{"resume_without_workdir", []string{"resume"}, exitUsage, "resume needs --workdir"},
		{"resume_with_package", []string{"resume", "--workdir", "w", sb}, exitUsage, "takes no package directory"},
		{"not_a_module", []string{"--patches", "testdata/patches/converge", "testdata/patches"}, exitError, "must be a Go module"},
		{"workdir_not_empty", []string{"--workdir", full, "--patches", "testdata/patches/converge", sb}, exitError, "is not empty"},
		{"resume_nothing", []string{"resume", "--workdir", t.TempDir()}, exitError, "no session \"fixloop\" checkpointed"},
		{"no_patch_left", []string{"--workdir", filepath.Join(t.TempDir(), "w"), "--patches", onePatch, "--quiet", sb}, exitError, "no candidate patch left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := fixloop(t, "", nil, tt.args...)
			if o.code != tt.code || !strings.Contains(o.stderr, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr should contain %q:\n%s", o.code, tt.code, tt.stderr, o.stderr)
			}
		})
	}

	t.Run("help", func(t *testing.T) {
		t.Parallel()
		o := fixloop(t, "", nil, "--help")
		if o.code != exitOK {
			t.Errorf("--help: exit %d", o.code)
		}
		for _, f := range []string{"workdir", "patches", "implementer-cmd", "reviewer-cmd", "no-review", "test-args",
			"max-iterations", "feedback-limit", "token-budget", "task-timeout", "answer", "ask", "session", "task-id",
			"report", "json", "clean", "quiet", "resume", "-v", "version", "Exit status", "130", "fixloop resume"} {
			if !strings.Contains(o.stderr, f) {
				t.Errorf("--help does not mention %q", f)
			}
		}
	})
	t.Run("clean_workdir", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "w")
		writeFile(t, filepath.Join(dir, "stale.txt"), "x")
		o := fixloop(t, "", nil, "--workdir", dir, "--clean", "--patches", "testdata/patches/converge", "--quiet", sb)
		if o.code != exitOK {
			t.Fatalf("exit %d\n%s", o.code, o.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "stale.txt")); err == nil {
			t.Error("--clean left stale.txt")
		}
	})
}

// TestVersion: --version prints the program's version line.
func TestVersion(t *testing.T) {
	t.Parallel()
	o := fixloop(t, "", nil, "--version")
	if o.code != exitOK || !strings.HasPrefix(o.stdout, "fixloop ") || !strings.Contains(o.stdout, "go1.") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", o.code, o.stdout, o.stderr)
	}
}

// TestVerbose: -v shows the implementer's output as it runs; without it,
// the output is only summarised.
func TestVerbose(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "talk.sh")
	writeFile(t, script, "echo 'implementer says: working on it'\nexit 1\n")
	for _, verbose := range []bool{false, true} {
		args := []string{"--workdir", filepath.Join(t.TempDir(), "w"), "--implementer-cmd", "sh " + shellQuote(script),
			"--max-iterations", "1", "--ask", "never", "--no-review", sandbox(t)}
		if verbose {
			args = append([]string{"-v"}, args...)
		}
		o := fixloop(t, "", nil, args...)
		live := regexp.MustCompile(`(?m)^implementer says: working on it$`)
		if got := len(live.FindAllString(o.stderr, -1)); got != 1 && verbose || got != 0 && !verbose {
			t.Errorf("-v=%t: the output appears %d times on stderr:\n%s", verbose, got, o.stderr)
		}
	}
}

// TestJSONResult: with --json the last line is the final result.
func TestJSONResult(t *testing.T) {
	t.Parallel()
	work := filepath.Join(t.TempDir(), "work")
	o := fixloop(t, "", nil, "--workdir", work, "--patches", "testdata/patches/converge", "--json", "--quiet", sandbox(t))
	if o.code != exitOK {
		t.Fatalf("exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	var last struct {
		Result *struct {
			Status     string `json:"status"`
			Reason     string `json:"reason"`
			Iterations int    `json:"iterations"`
			Usage      struct {
				Tokens      int64    `json:"tokens"`
				WallSeconds *float64 `json:"wall_seconds"`
			} `json:"usage"`
			ExitCode *int `json:"exit_code"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Result == nil {
		t.Fatalf("last line is not a result (%v):\n%s", err, lines[len(lines)-1])
	}
	r := last.Result
	if r.Status != "converged" || r.Reason == "" || r.Iterations != 3 || r.Usage.Tokens <= 0 || r.Usage.WallSeconds == nil || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Errorf("result = %+v", *r)
	}
}

// TestTemporaryWorkdirRemoved: without --workdir, a session that ends
// without success and cannot be resumed leaves no temporary copy behind.
func TestTemporaryWorkdirRemoved(t *testing.T) {
	t.Parallel()
	onePatch := t.TempDir()
	writeFile(t, filepath.Join(onePatch, "01", "claims.go"), readFile(t, "testdata/patches/converge/01/claims.go"))
	tmp := t.TempDir()
	o := fixloop(t, "", []string{"TMPDIR=" + tmp}, "--patches", onePatch, sandbox(t))
	if o.code != exitError {
		t.Fatalf("exit %d, want 1\n%s", o.code, o.stderr)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("left in the temporary directory: %v\n%s", entries, o.stderr)
	}
	if !strings.Contains(o.stderr, "removed the temporary working copy") {
		t.Errorf("stderr does not say the copy was removed:\n%s", o.stderr)
	}
}

// TestWorkdirOverlapsPackage: a working directory inside the package (the
// copy would copy itself without end), reached through a symbolic link or
// not, or one that holds the package (--clean would delete it) is refused,
// exit 1, before anything is created or removed.
func TestWorkdirOverlapsPackage(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pkg := filepath.Join(root, "pkg")
	if err := copyTree(sandbox(t), pkg); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(pkg, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(pkg, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := listTree(t, root)
	tests := []struct {
		name, workdir, want string
		clean               bool
	}{
		{"inside", filepath.Join(pkg, "work"), "is inside the package", false},
		{"inside_existing", filepath.Join(pkg, "sub"), "is inside the package", false},
		{"inside_through_link", filepath.Join(root, "link", "work"), "is inside the package", false},
		{"the_package_itself", pkg, "holds the package", true},
		{"holds_the_package", root, "holds the package", true},
	}
	for _, tt := range tests {
		args := []string{"--workdir", tt.workdir, "--patches", "testdata/patches/converge", "--quiet", pkg}
		if tt.clean {
			args = append([]string{"--clean"}, args...)
		}
		o := fixloop(t, "", nil, args...)
		if o.code != exitError || !strings.Contains(o.stderr, tt.want) || len(o.stderr) > 1000 {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tt.name, o.code, o.stderr, exitError, tt.want)
		}
	}
	if diff := cmp.Diff(before, listTree(t, root)); diff != "" {
		t.Errorf("files changed (-before +after):\n%s", diff)
	}
}

// listTree lists the paths under dir.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
