package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/examples/internal/xcmd"
)

// Protocol is the version of the implementer protocol, sent as "protocol"
// in every request and as PLANRUNNER_PROTOCOL in the environment.
const Protocol = "planrunner/v1"

// Request is what an implementer is asked to do: one phase of the plan (or,
// in file-based mode, the whole file). An external implementer receives it
// as one JSON object on stdin.
type Request struct {
	Protocol string `json:"protocol"`
	// Mode is "plan" or "file".
	Mode     string `json:"mode"`
	PlanFile string `json:"plan_file"`
	// Phase is the phase number (0 in file mode); Title and DependsOn
	// describe it.
	Phase     int    `json:"phase,omitempty"`
	Title     string `json:"title,omitempty"`
	DependsOn []int  `json:"depends_on,omitempty"`
	// Tasks are the phase's tasks (file mode: the file's items), numbered
	// from 1; Completed reports lists task numbers.
	Tasks []RequestTask `json:"tasks"`
	// Iteration is 1-indexed; MaxIterations 0 means unlimited.
	Iteration     int `json:"iteration"`
	MaxIterations int `json:"max_iterations"`
	// Wave is 1-indexed, Waves the number of waves in this iteration.
	Wave  int `json:"wave"`
	Waves int `json:"waves"`
	// ExternalCallBudget is the phase's share of the wave's external calls:
	// the implementer may make at most this many rate-limited calls and
	// must use a local fallback for the rest.
	ExternalCallBudget int `json:"external_call_budget"`
	// ContinuationSummary is the summary of the previous iteration when it
	// asked for a continuation.
	ContinuationSummary string `json:"continuation_summary,omitempty"`
	// WorkRemaining lists the remaining phases ("Phase_3") at the start of
	// the iteration.
	WorkRemaining []string `json:"work_remaining,omitempty"`
}

// RequestTask is one task of a Request.
type RequestTask struct {
	N    int    `json:"n"`
	Text string `json:"text"`
	Done bool   `json:"done"`
}

// Report is what an implementer did, the JSON object an external
// implementer prints as the last line of its stdout that starts with "{".
type Report struct {
	// Completed lists the numbers of the tasks now done; the runner checks
	// them off in the plan.
	Completed []int `json:"completed"`
	// ExternalCalls is the number of rate-limited calls made; it must not
	// exceed the request's ExternalCallBudget. LocalCalls counts the local
	// fallback calls.
	ExternalCalls int `json:"external_calls"`
	LocalCalls    int `json:"local_calls"`
	// MarkComplete asks the runner to add [COMPLETE] to the phase heading
	// when all its tasks are done; without it marker recovery does so after
	// the wave.
	MarkComplete bool `json:"mark_complete"`
	// Tokens is the implementer's token usage, if it knows it.
	Tokens int64 `json:"tokens,omitempty"`
	// Note is a free-form remark shown in the summary.
	Note string `json:"note,omitempty"`
}

// Implementer implements one phase. Implement is called concurrently for
// the phases of a wave; calls is the phase's gate to its share of the
// wave's external calls.
type Implementer interface {
	Implement(ctx context.Context, req *Request, calls *CallGate) (Report, error)
}

// ErrRateLimit is matched by every *RateLimitError.
var ErrRateLimit = errors.New("planrunner: external call budget exceeded")

// RateLimitError reports an implementer that made more external calls than
// its share. The runner refuses its report: nothing it claims is applied.
type RateLimitError struct {
	Phase       int
	Used, Share int
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%s made %d external calls, its share of the wave's budget is %d", phaseName(e.Phase), e.Used, e.Share)
}

// Is reports whether target is ErrRateLimit.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimit }

// CallGate hands out one phase's share of the external calls of its wave.
// The wave's calls are a budget.Budget whose hard limit on the Calls
// resource is the wave's budget, shared by the gates of all the wave's
// phases; each gate also stops at its own share, which is also what stops
// every call of a wave whose budget is 0 (a zero limit means "no limit" to
// budget). Safe for concurrent use.
type CallGate struct {
	wave  *budget.Budget
	share int

	mu    sync.Mutex
	used  int
	local int
}

// newCallGate returns a gate with the given share of wave. A share of 0
// allows no call (a zero budget.Limits would mean "no limit", so the share
// is checked first).
func newCallGate(wave *budget.Budget, share int) *CallGate {
	return &CallGate{wave: wave, share: share}
}

// TryExternal takes one external call from the share, or reports false when
// the share (or the wave's budget) is spent: the caller then uses the local
// fallback and calls Local.
func (g *CallGate) TryExternal() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.used >= g.share {
		return false
	}
	r, _, err := g.wave.Reserve(budget.Usage{Calls: 1})
	if err != nil {
		return false
	}
	r.Settle(budget.Usage{Calls: 1})
	g.used++
	return true
}

// Local records one call of the local fallback.
func (g *CallGate) Local() {
	g.mu.Lock()
	g.local++
	g.mu.Unlock()
}

// Counts returns the external and local calls made through the gate.
func (g *CallGate) Counts() (external, local int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used, g.local
}

// Share returns the gate's share.
func (g *CallGate) Share() int { return g.share }

// account records n external and local calls reported by an external
// implementer after the fact. The calls happened, so they are charged to the
// wave whatever the limit; n over the share fails with a *RateLimitError.
// A phase within its share is never blamed for another's excess.
func (g *CallGate) account(phase, n, local int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.used += n
	g.local += local
	g.wave.Charge(budget.Usage{Calls: int64(n)})
	if n > g.share {
		return &RateLimitError{Phase: phase, Used: n, Share: g.share}
	}
	return nil
}

// ErrSimulatedFailure is the error of a phase the simulated implementer is
// told to fail (--sim-fail).
var ErrSimulatedFailure = errors.New("simulated implementer failure")

// Sim is the built-in simulated implementer: it checks off up to PerCall
// unchecked tasks of a phase per call (all when PerCall is 0), making one
// search per task, external while the phase's share lasts and local after
// that, and asks for the [COMPLETE] marker when the phase is done unless
// SkipMarkers. Phases in Fail never progress: their calls fail with
// ErrSimulatedFailure.
type Sim struct {
	Fail        map[int]bool
	PerCall     int
	SkipMarkers bool
}

// Implement implements [Implementer].
func (s *Sim) Implement(ctx context.Context, req *Request, calls *CallGate) (Report, error) {
	if s.Fail[req.Phase] {
		return Report{}, fmt.Errorf("%s: %w", phaseOrFile(req), ErrSimulatedFailure)
	}
	var rep Report
	open := 0
	for _, t := range req.Tasks {
		if t.Done {
			continue
		}
		open++
		if s.PerCall > 0 && len(rep.Completed) >= s.PerCall {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, context.Cause(ctx)
		}
		if calls.TryExternal() {
			rep.ExternalCalls++
		} else {
			calls.Local()
			rep.LocalCalls++
		}
		rep.Completed = append(rep.Completed, t.N)
	}
	rep.MarkComplete = !s.SkipMarkers && len(rep.Completed) == open
	return rep, nil
}

// External runs an implementer command (`sh -c CMD`) once per phase. The
// Request goes to its stdin as JSON and to its environment as
// PLANRUNNER_* variables; its stdout's last line starting with "{" is the
// Report. A non-zero exit fails the phase. The command must not write the
// plan file: the runner applies the reported tasks under its own lock.
//
// The command runs in a process group of its own (xcmd.Prepare): when ctx
// ends (the task timeout of --phase-timeout, an interrupt) the group gets
// SIGTERM, and SIGKILL killGrace later; whatever the command left running
// is killed when it exits. Only the tail of its output is kept: the last
// maxStdout bytes of stdout, where the report is, and the last maxStderr
// bytes of stderr, whose last line (at most maxErrLine bytes) explains a
// failure.
type External struct {
	Cmd string
}

const (
	// maxStdout bounds the tail of an implementer's stdout that is kept.
	maxStdout = 1 << 20
	// maxStderr bounds the tail of its stderr that is kept.
	maxStderr = 64 << 10
	// maxErrLine bounds the line of stderr (and the note of a report)
	// that reaches the terminal and the summary.
	maxErrLine = 512
	// killGrace is how long a cancelled implementer and its children have
	// between SIGTERM and SIGKILL.
	killGrace = 3 * time.Second
)

// Implement implements [Implementer].
func (x *External) Implement(ctx context.Context, req *Request, calls *CallGate) (Report, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return Report{}, err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", x.Cmd)
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	stdout, stderr := &xcmd.Tail{Max: maxStdout}, &xcmd.Tail{Max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(os.Environ(),
		"PLANRUNNER_PROTOCOL="+Protocol,
		"PLANRUNNER_MODE="+req.Mode,
		"PLANRUNNER_PLAN="+req.PlanFile,
		"PLANRUNNER_PHASE="+strconv.Itoa(req.Phase),
		"PLANRUNNER_ITERATION="+strconv.Itoa(req.Iteration),
		"PLANRUNNER_WAVE="+strconv.Itoa(req.Wave),
		"PLANRUNNER_EXTERNAL_BUDGET="+strconv.Itoa(req.ExternalCallBudget),
	)
	xcmd.Prepare(cmd, killGrace)
	err = xcmd.Run(cmd)
	if ctx.Err() != nil {
		return Report{}, fmt.Errorf("%s: implementer stopped: %w", phaseOrFile(req), context.Cause(ctx))
	}
	if err != nil {
		if msg := lastLine(stderr.String(), stderr.Cut() > 0); msg != "" {
			return Report{}, fmt.Errorf("%s: implementer failed: %w: %s", phaseOrFile(req), err, msg)
		}
		return Report{}, fmt.Errorf("%s: implementer failed: %w", phaseOrFile(req), err)
	}
	out := stdout.String()
	if stdout.Cut() > 0 {
		out = dropPartialLine(out)
	}
	rep, err := parseReport(out)
	if err != nil {
		return Report{}, fmt.Errorf("%s: %w%s", phaseOrFile(req), err, cutNote(stdout))
	}
	if stdout.Cut() > 0 && !hasReportLine(out) {
		return Report{}, fmt.Errorf("%s: %w: no report in the last %d bytes of its stdout%s", phaseOrFile(req), ErrProtocol, maxStdout, cutNote(stdout))
	}
	rep.Note = clip(rep.Note, maxErrLine)
	if c := stdout.Cut(); c > 0 {
		rep.Note = strings.TrimSpace(rep.Note + " " + fmt.Sprintf("(stdout cut: first %d of %d bytes dropped)", c, c+maxStdout))
	}
	if err := calls.account(req.Phase, rep.ExternalCalls, rep.LocalCalls); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// cutNote says how much of a cut output was dropped, "" when none was.
func cutNote(t *xcmd.Tail) string {
	if c := t.Cut(); c > 0 {
		return fmt.Sprintf(" (stdout cut: first %d bytes dropped, last %d kept)", c, maxStdout)
	}
	return ""
}

// dropPartialLine drops the first line of a cut output: its start was cut.
func dropPartialLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// hasReportLine reports whether out has a line starting with "{".
func hasReportLine(out string) bool {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			return true
		}
	}
	return false
}

// ErrProtocol is matched by the errors of an implementer that breaks the
// protocol (an unreadable report, an unknown task number).
var ErrProtocol = errors.New("implementer protocol violation")

// parseReport reads the report from an implementer's stdout: the last line
// that starts with "{". No such line is an empty report (nothing done).
func parseReport(out string) (Report, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var rep Report
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rep); err != nil {
			return Report{}, fmt.Errorf("%w: report %q: %v", ErrProtocol, l, err)
		}
		if rep.ExternalCalls < 0 || rep.LocalCalls < 0 || rep.Tokens < 0 {
			return Report{}, fmt.Errorf("%w: negative count in report %q", ErrProtocol, l)
		}
		return rep, nil
	}
	return Report{}, nil
}

func phaseOrFile(req *Request) string {
	if req.Mode == modeFile {
		return req.PlanFile
	}
	return phaseName(req.Phase)
}

// lastLine returns the last non-empty line of s, at most maxErrLine bytes
// of valid UTF-8, marked "…" when clipped; cut says that s is the tail of a
// longer output, so that a first line without its start is not trusted.
func lastLine(s string, cut bool) string {
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, '\n')
	if i >= 0 {
		s = s[i+1:]
	} else if cut {
		s = "…" + s
	}
	return clip(s, maxErrLine)
}

// clip returns s as valid UTF-8 of at most n bytes (plus "…" when cut).
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
