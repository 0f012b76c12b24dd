package study

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/examples/internal/xcmd"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// AgentTask is the JSON an external agent command receives on stdin.
type AgentTask struct {
	Role          string          `json:"role"`
	Agent         string          `json:"agent"`
	Model         string          `json:"model,omitempty"`
	Task          string          `json:"task"`
	Iteration     int             `json:"iteration"`
	MaxIterations int             `json:"max_iterations"`
	Action        string          `json:"action"`
	Prompt        string          `json:"prompt"`
	Question      string          `json:"question"`
	Questions     []AgentQuestion `json:"questions"`
	Root          string          `json:"root"`
	Gaps          []gap.Gap       `json:"gaps"`
	Focus         []string        `json:"focus,omitempty"`
	Findings      []AgentFinding  `json:"findings"`
	Conflicts     []Conflict      `json:"conflicts,omitempty"`
	FilesAnalyzed []string        `json:"files_analyzed"`
	Feedback      string          `json:"feedback,omitempty"`
	Guidance      []string        `json:"guidance,omitempty"`
	Answer        string          `json:"answer,omitempty"`
}

// AgentQuestion is a question as an external agent sees it (numbered from 1).
type AgentQuestion struct {
	Number   int    `json:"number"`
	Text     string `json:"text"`
	Critical bool   `json:"critical"`
	Answered bool   `json:"answered"`
}

// AgentFinding is a finding exchanged with an external agent: the existing
// findings in the task, the agent's findings in its reply.
type AgentFinding struct {
	// ID names an existing finding the agent enhances ("F003"); Key
	// identifies a new one (default: derived from the description).
	ID          string   `json:"id,omitempty"`
	Key         string   `json:"key,omitempty"`
	Description string   `json:"description"`
	Confidence  float64  `json:"confidence,omitempty"`
	Citations   []string `json:"citations"`
	// Questions lists the numbers of the questions it answers (default:
	// matched by keywords).
	Questions []int    `json:"questions,omitempty"`
	Pattern   bool     `json:"pattern,omitempty"`
	Examples  int      `json:"examples,omitempty"`
	Impact    string   `json:"impact,omitempty"`
	Sources   []string `json:"sources,omitempty"`
	// Area is "security" or "performance" for a finding that concerns
	// one: a low-confidence finding in an area is a Security or
	// Performance gap (seed 000), for the specialist agent.
	Area string `json:"area,omitempty"`
}

// AgentReply is the JSON an external agent command writes on stdout.
type AgentReply struct {
	Findings      []AgentFinding `json:"findings"`
	FilesAnalyzed []string       `json:"files_analyzed,omitempty"`
	// Resolved lists the conflicts the agent settled.
	Resolved []struct {
		Conflict   string `json:"conflict"`
		Resolution string `json:"resolution"`
	} `json:"resolved,omitempty"`
	Usage struct {
		Tokens int64   `json:"tokens,omitempty"`
		Cost   float64 `json:"cost,omitempty"`
	} `json:"usage,omitzero"`
}

// ErrAgent is matched by every *AgentError.
var ErrAgent = errors.New("external agent failed")

// AgentError reports a failed external agent command.
type AgentError struct {
	Role, Command string
	Err           error
	Stderr        string
}

// Error names the role, the command and why it failed, with the end of
// what the command printed on stderr.
func (e *AgentError) Error() string {
	msg := fmt.Sprintf("agent command for role %s (%s): %v", e.Role, e.Command, e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// Is reports whether target is ErrAgent.
func (e *AgentError) Is(target error) bool { return target == ErrAgent }

// Unwrap returns the underlying error.
func (e *AgentError) Unwrap() error { return e.Err }

const (
	// maxReply bounds what an agent may write on stdout.
	maxReply = 16 << 20
	// maxStderr bounds the tail of an agent's stderr that is kept, and
	// maxErrText what of it reaches the displays and the report.
	maxStderr  = 64 << 10
	maxErrText = 512
	// killGrace is how long a cancelled agent command and its children
	// have between SIGTERM and SIGKILL.
	killGrace = 3 * time.Second
)

// shellCommand runs line with the system's shell: /bin/sh -c, or cmd /C on
// Windows.
func shellCommand(ctx context.Context, line string) *exec.Cmd {
	if runtime.GOOS == "windows" {
		return exec.CommandContext(ctx, "cmd", "/C", line)
	}
	return exec.CommandContext(ctx, "/bin/sh", "-c", line)
}

// stderrTail returns the end of an agent's stderr for its error: its last
// lines, at most maxErrText bytes of valid UTF-8, starting with "…" when
// cut.
func stderrTail(t *xcmd.Tail) string {
	s := strings.ToValidUTF8(strings.TrimSpace(t.String()), "\uFFFD")
	if len(s) <= maxErrText && t.Cut() == 0 {
		return s
	}
	s = s[max(0, len(s)-maxErrText):]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "…" + s
}

// parseReply decodes an agent's stdout: one JSON findings object.
func parseReply(data []byte) (*AgentReply, error) {
	var reply AgentReply
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&reply); err != nil {
		return nil, fmt.Errorf("reply is not a JSON findings object: %w", err)
	}
	return &reply, nil
}

// external runs the command that plays the task's role: the task as JSON on
// stdin, the findings as JSON on stdout. The command runs through the shell
// in the current directory, with RESEARCH_ROOT, RESEARCH_ROLE and
// RESEARCH_TASK set, in a process group of its own (xcmd.Prepare): when the
// task is cancelled or times out the group gets SIGTERM, then SIGKILL
// killGrace later, and whatever the command left running is killed when it
// exits.
func (w *researcher) external(ctx context.Context, command string, s *Notes, t iterate.Task) (iterate.Outcome[Notes], error) {
	in, err := json.Marshal(w.agentTask(s, t))
	if err != nil {
		return iterate.Outcome[Notes]{}, err
	}
	cmd := shellCommand(ctx, command)
	cmd.Stdin = bytes.NewReader(in)
	stdout := &limitedBuffer{max: maxReply}
	stderr := &xcmd.Tail{Max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(os.Environ(), "RESEARCH_ROOT="+w.ix.root, "RESEARCH_ROLE="+string(t.Role), "RESEARCH_TASK="+t.ID())
	xcmd.Prepare(cmd, killGrace)
	start := time.Now()
	if err := xcmd.Run(cmd); err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return iterate.Outcome[Notes]{}, &AgentError{Role: string(t.Role), Command: command, Err: err, Stderr: stderrTail(stderr)}
	}
	if stdout.over {
		return iterate.Outcome[Notes]{}, &AgentError{Role: string(t.Role), Command: command, Err: fmt.Errorf("reply larger than %d bytes", maxReply)}
	}
	reply, err := parseReply(stdout.Bytes())
	if err != nil {
		return iterate.Outcome[Notes]{}, &AgentError{Role: string(t.Role), Command: command, Err: err}
	}
	part := w.fromReply(s, reply)
	usage := budget.Usage{Tokens: reply.Usage.Tokens, Wall: time.Since(start)}
	if c := reply.Usage.Cost; c > 0 && !math.IsInf(c, 0) {
		usage.Cost = c
	}
	if usage.Tokens < 0 {
		usage.Tokens = 0
	}
	return iterate.Outcome[Notes]{Part: part, Usage: usage}, nil
}

// agentTask builds the task description sent to an external agent.
func (w *researcher) agentTask(s *Notes, t iterate.Task) AgentTask {
	at := AgentTask{
		Role: string(t.Role), Agent: agentName(&t), Model: agentOf(t.Role).Model, Task: t.ID(), Iteration: t.Iteration, MaxIterations: t.MaxIterations,
		Action: string(t.Action), Prompt: t.Prompt, Question: s.Question, Root: w.ix.root, Gaps: t.Gaps,
		Conflicts: s.Conflicts, FilesAnalyzed: s.Analyzed, Feedback: t.Feedback, Guidance: t.Guidance, Answer: t.Answer,
	}
	if at.Gaps == nil {
		at.Gaps = []gap.Gap{}
	}
	if at.FilesAnalyzed == nil {
		at.FilesAnalyzed = []string{}
	}
	for _, g := range t.Gaps {
		unionStrings(&at.Focus, g.Focus)
	}
	for i, q := range s.Questions {
		at.Questions = append(at.Questions, AgentQuestion{Number: i + 1, Text: q.Text, Critical: q.Critical, Answered: q.Answered})
	}
	at.Findings = []AgentFinding{}
	for i := range s.Findings {
		f := &s.Findings[i]
		af := AgentFinding{ID: f.ID, Key: f.Key, Description: f.Description, Confidence: f.Confidence,
			Citations: f.Citations, Pattern: f.Kind == KindPattern, Examples: f.Examples, Impact: f.Impact, Sources: f.sources(), Area: f.Area}
		for _, t := range f.Tags {
			af.Questions = append(af.Questions, t.Question+1)
		}
		at.Findings = append(at.Findings, af)
	}
	return at
}

// findingArea returns the area an agent gave a finding, lower-cased:
// "security" or "performance"; "" for any other.
func findingArea(area string) string {
	switch a := strings.ToLower(strings.TrimSpace(area)); a {
	case "security", "performance":
		return a
	}
	return ""
}

// fromReply turns an agent's reply into a part of the notes. Citations are
// validated later, by Integrate, like those of every agent.
func (w *researcher) fromReply(s *Notes, r *AgentReply) Notes {
	part := Notes{}
	for _, p := range r.FilesAnalyzed {
		unionStrings(&part.Analyzed, []string{p})
	}
	for _, af := range r.Findings {
		f := Finding{ID: af.ID, Key: af.Key, Kind: KindClaim, Description: strings.TrimSpace(af.Description),
			Citations: af.Citations, Examples: af.Examples, Impact: af.Impact, Area: findingArea(af.Area)}
		if af.Pattern {
			f.Kind = KindPattern
		}
		if ex := s.find(af.ID); ex != nil {
			f.Key, f.Kind = ex.Key, ex.Kind
			f.File, f.Line, f.End, f.Head = ex.File, ex.Line, ex.End, ex.Head
			f.Tags = ex.Tags
		} else {
			f.ID = ""
		}
		if f.Key == "" {
			sum := sha256.Sum256([]byte(strings.ToLower(f.Description)))
			f.Key = "claim:" + hex.EncodeToString(sum[:6])
		}
		conf := af.Confidence
		if conf <= 0 || math.IsNaN(conf) {
			conf = 0.60
		}
		f.Claims = []Claim{{Confidence: round2(min(conf, maxConfidence))}}
		for _, q := range af.Questions {
			if q >= 1 && q <= len(s.Questions) {
				mergeTags(&f.Tags, []Tag{{Question: q - 1, Score: relevantScore}})
			}
		}
		if len(af.Questions) == 0 && f.Tags == nil {
			desc := strings.ToLower(f.Description)
			for qi, q := range s.Questions {
				hits := 0
				for _, k := range q.Keywords {
					if containsWord(desc, k.Word, k.Explicit) {
						hits++
					}
				}
				if hits >= min(2, len(q.Keywords)) {
					f.Tags = append(f.Tags, Tag{Question: qi, Score: hits})
				}
			}
		}
		switch f.Impact {
		case "critical", "important", "informational":
		default:
			f.Impact = "informational"
			if len(f.Tags) > 0 {
				f.Impact = "critical"
			}
		}
		f.Relevance = 0.5
		part.Findings = append(part.Findings, f)
	}
	for _, res := range r.Resolved {
		part.Conflicts = append(part.Conflicts, Conflict{ID: res.Conflict, Resolved: true, Resolution: res.Resolution})
	}
	return part
}

// limitedBuffer keeps at most max bytes and remembers whether more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

// Write keeps what fits and reports every byte written.
func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
