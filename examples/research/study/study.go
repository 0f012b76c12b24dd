// Package study is the research loop of refine's seed 000: it answers a
// question about a Go source tree with a bounded, resumable, adaptive
// refinement loop, and cites every claim as file:line.
//
// Deterministic program-analysis agents (go/parser, go/ast and text search
// over the tree) play the roles of the loop: an explorer that reads the
// files most relevant to the question, a citation worker that pins findings
// to their exact definitions and uses, a pattern worker that collects
// concrete examples, and a verifier that resolves conflicting findings with
// the tree's build constraints. Any role can be an external command instead
// (Args.Agents), so the same loop drives a real AI agent.
//
// A host builds a session's loop with [New] from plain [Args], runs it with
// [iterate.New] (adding its checkpointer, session name and observer to
// [Loop.Options]) and reports the result with [NewReport]. The command
// examples/research is such a host; so is a fleet that runs research
// sessions across processes.
package study

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/refine-go/refine/examples/internal/xcmd"
	"github.com/refine-go/refine/iterate"
)

// Defaults of the zero values of [Args].
const (
	DefaultFilesPerTask = 20
	DefaultTaskTimeout  = 5 * time.Minute
)

// Args are what a research session is started from. They are plain values
// that encode as JSON, so that a host can store them and build the same
// loop again to resume the session, in this process or another.
type Args struct {
	// Root is the Go source tree to research; "" is $(go env GOROOT)/src,
	// without its cmd directory.
	Root string `json:"root,omitempty"`
	// Questions is the text of a question file ("" = the built-in
	// question about context cancellation in the standard library):
	//
	//	# comment
	//	question: How does the Go standard library implement context cancellation?
	//	critical: Where is the cancellation signal propagated to child contexts? [propagateCancel, children]
	//	optional: Which packages accept a context?
	//
	// Brackets list explicit keywords (identifiers). "critical:" questions
	// must be answered for the research to converge; "optional:" ones are
	// only reported.
	Questions string `json:"questions,omitempty"`
	// Skip lists directory names not to research, e.g. "testdata" and
	// "vendor". Blank names are ignored.
	Skip []string `json:"skip,omitempty"`
	// FilesPerTask bounds the files an explorer reads per task (0:
	// DefaultFilesPerTask).
	FilesPerTask int `json:"files_per_task,omitempty"`
	// MaxIterations is the iteration limit; at the limit the research ends
	// with partial convergence (0: iterate.DefaultMaxIterations).
	MaxIterations int `json:"max_iterations,omitempty"`
	// TaskTimeout is the time limit of each agent task (0:
	// DefaultTaskTimeout; negative: none).
	TaskTimeout time.Duration `json:"task_timeout,omitempty"`
	// Agents maps a role (one of AgentRoles) to the external command that
	// plays it, run through the shell with the task as JSON on stdin
	// (AgentTask) and printing its findings as JSON on stdout
	// (AgentReply).
	Agents map[string]string `json:"agents,omitempty"`
}

// Loop is a research session's loop, what a host runs: the worker, the
// engine's options and the state a new session starts from.
type Loop struct {
	// Worker runs the agents and folds their findings into the notes.
	Worker iterate.Worker[Notes]
	// Options are every engine setting the research decides by: the
	// iterate.Adaptive strategy with seed 000's roles, the thresholds, the
	// iteration limit, the task timeout and the settings fingerprint. The
	// host adds its checkpointer, the session's name and an observer.
	Options []iterate.Option
	// Initial is the state a new session starts from: the questions and
	// the files estimated relevant to them. When Initial.Estimate is empty
	// no file of the tree mentions the topic, and a new session has
	// nothing to research (resuming one is fine).
	Initial Notes
	// Session is the default name of the session: derived from the root,
	// the questions and Skip, so that the same arguments find it again.
	Session string
	// MaxIterations is the iteration limit of Options, for NewReport.
	MaxIterations int

	agents map[string]string
}

// ArgError reports an argument of [New] that is not valid.
type ArgError struct {
	Arg string // the argument's JSON name, e.g. "root"
	Err error
}

// Error names the argument and what is wrong with it.
func (e *ArgError) Error() string { return e.Arg + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *ArgError) Unwrap() error { return e.Err }

// New builds the loop of a research session from its arguments: it reads
// the questions and indexes the Go files of the tree (which takes a while
// on a large tree; ctx cancels it). Invalid arguments are an *ArgError or,
// for the questions, a *QuestionFileError; a tree without Go files is
// ErrNoFiles.
func New(ctx context.Context, a Args) (*Loop, error) {
	switch {
	case a.FilesPerTask < 0:
		return nil, &ArgError{"files_per_task", fmt.Errorf("must not be negative, got %d", a.FilesPerTask)}
	case a.MaxIterations < 0:
		return nil, &ArgError{"max_iterations", fmt.Errorf("must not be negative, got %d", a.MaxIterations)}
	}
	for role, cmd := range a.Agents {
		if !slices.Contains(knownRoles, role) {
			return nil, &ArgError{"agents", fmt.Errorf("unknown role %q (roles: %s)", role, strings.Join(knownRoles, ", "))}
		}
		if strings.TrimSpace(cmd) == "" {
			return nil, &ArgError{"agents", fmt.Errorf("no command for role %q", role)}
		}
	}
	filesPerTask := orDefault(a.FilesPerTask, DefaultFilesPerTask)
	maxIter := orDefault(a.MaxIterations, iterate.DefaultMaxIterations)

	skip := map[string]bool{}
	for _, s := range a.Skip {
		if s = strings.TrimSpace(s); s != "" {
			skip[s] = true
		}
	}
	root := a.Root
	if root == "" {
		gr, err := goroot(ctx)
		if err != nil {
			return nil, err
		}
		root = filepath.Join(gr, "src")
		skip["cmd"] = true
	}
	root, err := filepath.Abs(root)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(root); err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s is not a directory", root)
		}
	}
	if err != nil {
		return nil, &ArgError{"root", err}
	}

	qname, qtext := "built-in questions", defaultQuestions
	if a.Questions != "" {
		qname, qtext = "questions", a.Questions
	}
	qf, err := parseQuestions(qname, qtext)
	if err != nil {
		return nil, err
	}

	var words []string
	for _, k := range allKeywords(&Notes{Topic: qf.Topic, Questions: qf.Questions}) {
		if !slices.Contains(words, k.Word) {
			words = append(words, k.Word)
		}
	}
	ix, err := buildIndex(ctx, root, skip, words)
	if err != nil {
		return nil, err
	}
	initial := Notes{Root: root, Question: qf.Question, Topic: qf.Topic, Questions: qf.Questions, TotalFiles: len(ix.files)}
	initial.Estimate = ix.estimate(qf.Topic)
	if len(initial.Estimate) == 0 {
		// Nothing repeats the topic: the files that mention it at all.
		initial.Estimate = ix.rank(qf.Topic, 2*filesPerTask, nil)
	}

	// The session's identity: the same tree, questions and skipped
	// directories are the same session.
	id := sha256.Sum256([]byte(root + "\x00" + qtext + "\x00" + strings.Join(a.Skip, ",")))
	agents := maps.Clone(a.Agents)
	w := &researcher{ix: ix, lines: &lineCounter{ix: ix}, agents: agents, filesPerTask: filesPerTask, scopes: &scopes{}}
	return &Loop{
		Worker: w,
		// The default strategy, iterate.Adaptive, with seed 000's role
		// table (roles.go): it groups the citation and pattern roles, so
		// that one citation task pins every finding that needs evidence
		// and one pattern task collects the examples of every unclear
		// pattern.
		Options: []iterate.Option{
			iterate.WithStrategy(&iterate.Adaptive{Roles: seed000Roles}),
			iterate.WithThresholds(thresholds),
			iterate.WithMaxIterations(maxIter),
			iterate.WithTaskTimeout(taskTimeout(a.TaskTimeout)),
			iterate.WithFingerprint(fmt.Sprintf("research/v1|%x|files=%d", id[:8], filesPerTask)),
		},
		Initial:       initial,
		Session:       "research-" + hex.EncodeToString(id[:6]),
		MaxIterations: maxIter,
		agents:        agents,
	}, nil
}

// Observer returns an observer (iterate.WithObserver) that prints seed
// 000's progress and convergence displays of the loop to w. It is safe for
// concurrent use.
func (l *Loop) Observer(w io.Writer) func(iterate.Event) {
	d := &display{w: w, external: l.agents}
	return d.observe
}

// AgentRoles returns the roles an external command can play (Args.Agents).
func AgentRoles() []string { return slices.Clone(knownRoles) }

// orDefault returns v, or def when v is zero.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// taskTimeout returns the engine's task timeout of Args.TaskTimeout: 0 is
// the default, a negative one none (the engine's 0).
func taskTimeout(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultTaskTimeout
	case d < 0:
		return 0
	}
	return d
}

// goroot returns $(go env GOROOT) (the go command runs in a process group
// of its own, like every command the research runs), or the GOROOT this
// program was built with.
func goroot(ctx context.Context) (string, error) {
	if gr := os.Getenv("GOROOT"); gr != "" {
		return gr, nil
	}
	goBin := "go"
	if g := os.Getenv("GO"); g != "" {
		goBin = g
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(tctx, goBin, "env", "GOROOT")
	var out bytes.Buffer
	cmd.Stdout = &out
	xcmd.Prepare(cmd, killGrace)
	if err := xcmd.Run(cmd); err == nil {
		if gr := strings.TrimSpace(out.String()); gr != "" {
			return gr, nil
		}
	}
	if build.Default.GOROOT != "" {
		return build.Default.GOROOT, nil
	}
	return "", errors.New("cannot find GOROOT (is the go command installed?); use --root")
}
