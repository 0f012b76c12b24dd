package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults of the settings no source gives.
const (
	defaultFailureThreshold = 3
	defaultTokenBudget      = 100_000
	// defaultAITimeout bounds a run of the AI CLI unless configured: an
	// AI CLI can wait forever (Codex offline retries "waiting for
	// network" without end).
	defaultAITimeout = 30 * time.Minute
)

// layer is one source of settings: the command line, the environment, a
// config file or one of its procedures. A nil field is not set by the source.
type layer struct {
	AICmd            *string   `json:"ai_cmd,omitempty"`
	MaxIterations    *int      `json:"max_iterations,omitempty"`
	FailureThreshold *int      `json:"failure_threshold,omitempty"`
	TokenBudget      *int      `json:"token_budget,omitempty"`
	Gates            *[]string `json:"gates,omitempty"`
	Context          *[]string `json:"context,omitempty"`
	Prompts          *string   `json:"prompts,omitempty"`
	// AITimeout bounds each run of the AI CLI; 0 means no bound.
	AITimeout *duration `json:"ai_timeout,omitempty"`
	// MaxTime bounds the wall time of the loop; 0 means no bound.
	MaxTime *duration `json:"max_time,omitempty"`
	// AIOutput is the format of the AI CLI's output (outputFormats).
	AIOutput *string `json:"ai_output,omitempty"`
	// MaxCost and MaxTokens bound what the loop spends, as the AI CLI
	// reports it (or, for tokens, the prompt's estimate); 0 means no bound.
	MaxCost   *float64 `json:"max_cost,omitempty"`
	MaxTokens *int64   `json:"max_tokens,omitempty"`
	// DoneMarker is the text by which the AI CLI says the work is done.
	DoneMarker *string `json:"done_marker,omitempty"`
	// DoneFile is the file by which the AI CLI says the work is done
	// (relative to the workspace).
	DoneFile *string `json:"done_file,omitempty"`
	// GateTimeout bounds each run of a quality gate; 0 means no bound.
	GateTimeout *duration `json:"gate_timeout,omitempty"`
	// Git is what each iteration does with its changes: gitOff, gitCommit
	// or gitStash.
	Git *string `json:"git,omitempty"`
}

// duration is a time.Duration written as a string in JSON, e.g. "10m".
type duration time.Duration

// UnmarshalJSON reads a duration written as time.ParseDuration reads it.
func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"10m\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (such as \"10m\")", s)
	}
	*d = duration(v)
	return nil
}

// MarshalJSON writes the duration as a string, e.g. "10m0s".
func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// validate checks the values the layer sets; name turns a setting's JSON key
// into the name the user wrote it under.
func (l *layer) validate(name func(key string) string) error {
	switch {
	case l.AICmd != nil && strings.TrimSpace(*l.AICmd) == "":
		return usagef("%s must not be empty", name("ai_cmd"))
	case l.MaxIterations != nil && *l.MaxIterations < 0:
		return usagef("%s must be 0 (unlimited) or more, got %d", name("max_iterations"), *l.MaxIterations)
	case l.FailureThreshold != nil && *l.FailureThreshold < 1:
		return usagef("%s must be at least 1, got %d", name("failure_threshold"), *l.FailureThreshold)
	case l.TokenBudget != nil && *l.TokenBudget < 1:
		return usagef("%s must be at least 1, got %d", name("token_budget"), *l.TokenBudget)
	case l.Prompts != nil && strings.TrimSpace(*l.Prompts) == "":
		return usagef("%s must not be empty", name("prompts"))
	case l.AITimeout != nil && *l.AITimeout < 0:
		return usagef("%s must be 0 (none) or more, got %s", name("ai_timeout"), time.Duration(*l.AITimeout))
	case l.MaxTime != nil && *l.MaxTime < 0:
		return usagef("%s must be 0 (none) or more, got %s", name("max_time"), time.Duration(*l.MaxTime))
	case l.GateTimeout != nil && *l.GateTimeout < 0:
		return usagef("%s must be 0 (none) or more, got %s", name("gate_timeout"), time.Duration(*l.GateTimeout))
	case l.MaxCost != nil && (math.IsNaN(*l.MaxCost) || math.IsInf(*l.MaxCost, 0) || *l.MaxCost < 0):
		return usagef("%s must be 0 (none) or a positive amount of US dollars, got %v", name("max_cost"), *l.MaxCost)
	case l.MaxTokens != nil && *l.MaxTokens < 0:
		return usagef("%s must be 0 (none) or more, got %d", name("max_tokens"), *l.MaxTokens)
	case l.DoneMarker != nil && strings.TrimSpace(*l.DoneMarker) == "":
		return usagef("%s must not be empty", name("done_marker"))
	case l.DoneFile != nil && strings.TrimSpace(*l.DoneFile) == "":
		return usagef("%s must not be empty", name("done_file"))
	}
	if l.AIOutput != nil {
		if err := validOutputFormat(name("ai_output"), *l.AIOutput); err != nil {
			return err
		}
	}
	if l.Git != nil {
		if err := validGitMode(name("git"), *l.Git); err != nil {
			return err
		}
	}
	if l.Gates != nil {
		for _, g := range *l.Gates {
			if strings.TrimSpace(g) == "" {
				return usagef("%s must not hold an empty command", name("gates"))
			}
		}
	}
	if l.Context != nil {
		for _, c := range *l.Context {
			if strings.TrimSpace(c) == "" {
				return usagef("%s must not hold an empty path", name("context"))
			}
		}
	}
	return nil
}

// rebase makes the layer's relative paths relative to dir.
func (l *layer) rebase(dir string) {
	if l.Prompts != nil {
		p := abs(dir, *l.Prompts)
		l.Prompts = &p
	}
	if l.Context != nil {
		c := absAll(dir, *l.Context)
		l.Context = &c
	}
}

// fileConfig is a config file: top-level settings and per-procedure ones.
type fileConfig struct {
	layer
	// DefaultIterations is another name for max_iterations (seed 004's
	// example 5 configures "default_iterations: 0"); max_iterations wins.
	DefaultIterations *int                        `json:"default_iterations,omitempty"`
	Procedures        map[string]*procedureConfig `json:"procedures,omitempty"`
}

// procedureConfig is the settings of one procedure in a config file, where
// default_iterations is another name for max_iterations too.
type procedureConfig struct {
	layer
	DefaultIterations *int `json:"default_iterations,omitempty"`
}

// procedure returns the layer of the procedure, empty when the file has none.
func (c *fileConfig) procedure(name string) *layer {
	if p := c.Procedures[name]; p != nil {
		return &p.layer
	}
	return &layer{}
}

// loadConfig reads the config file at path; a missing file is an empty
// config. Relative paths in it are made relative to workspace.
func loadConfig(path, workspace string) (*fileConfig, error) {
	c := &fileConfig{}
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return c, nil
	}
	if err != nil {
		return nil, usagef("config %s: %v", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, usagef("config %s: %v", path, err)
	}
	if dec.More() {
		return nil, usagef("config %s: more than one JSON value", path)
	}
	if c.MaxIterations == nil {
		c.MaxIterations = c.DefaultIterations
	}
	if err := c.validate(func(key string) string { return fmt.Sprintf("config %s: %s", path, key) }); err != nil {
		return nil, err
	}
	c.rebase(workspace)
	for name, p := range c.Procedures {
		if p == nil {
			return nil, usagef("config %s: procedures.%s must be an object", path, name)
		}
		if p.MaxIterations == nil {
			p.MaxIterations = p.DefaultIterations
		}
		if err := p.validate(func(key string) string { return fmt.Sprintf("config %s: procedures.%s.%s", path, name, key) }); err != nil {
			return nil, err
		}
		p.rebase(workspace)
	}
	return c, nil
}

// globalConfigPath is AGENTLOOP_GLOBAL_CONFIG, else
// $XDG_CONFIG_HOME/agentloop/config.json, else
// ~/.config/agentloop/config.json ("" when there is no home either).
func globalConfigPath(getenv func(string) string) string {
	if p := getenv("AGENTLOOP_GLOBAL_CONFIG"); p != "" {
		return p
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "agentloop", "config.json")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "agentloop", "config.json")
	}
	return ""
}

// envLayer reads the AGENTLOOP_* variables; empty ones are not set.
func envLayer(getenv func(string) string, cwd string) (*layer, error) {
	l := &layer{}
	str := func(name string) *string {
		if v := getenv(name); v != "" {
			return &v
		}
		return nil
	}
	num := func(name string) (*int, error) {
		v := getenv(name)
		if v == "" {
			return nil, nil
		}
		n, err := atoi(name, v)
		return &n, err
	}
	var err error
	l.AICmd = str("AGENTLOOP_AI_CMD")
	if l.MaxIterations, err = num("AGENTLOOP_MAX_ITERATIONS"); err != nil {
		return nil, err
	}
	if l.FailureThreshold, err = num("AGENTLOOP_FAILURE_THRESHOLD"); err != nil {
		return nil, err
	}
	if l.TokenBudget, err = num("AGENTLOOP_TOKEN_BUDGET"); err != nil {
		return nil, err
	}
	if v := getenv("AGENTLOOP_AI_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, usagef("AGENTLOOP_AI_TIMEOUT: %q is not a duration (such as 10m)", v)
		}
		l.AITimeout = (*duration)(&d)
	}
	if v := getenv("AGENTLOOP_MAX_TIME"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, usagef("AGENTLOOP_MAX_TIME: %q is not a duration (such as 10m)", v)
		}
		l.MaxTime = (*duration)(&d)
	}
	if v := getenv("AGENTLOOP_GATE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, usagef("AGENTLOOP_GATE_TIMEOUT: %q is not a duration (such as 10m)", v)
		}
		l.GateTimeout = (*duration)(&d)
	}
	if v := getenv("AGENTLOOP_MAX_COST"); v != "" {
		c, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, usagef("AGENTLOOP_MAX_COST: %q is not an amount (such as 2.50)", v)
		}
		l.MaxCost = &c
	}
	if v := getenv("AGENTLOOP_MAX_TOKENS"); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, usagef("AGENTLOOP_MAX_TOKENS: %q is not a number", v)
		}
		l.MaxTokens = &n
	}
	l.AIOutput = str("AGENTLOOP_AI_OUTPUT")
	l.DoneMarker = str("AGENTLOOP_DONE_MARKER")
	l.DoneFile = str("AGENTLOOP_DONE_FILE")
	l.Git = str("AGENTLOOP_GIT")
	if p := str("AGENTLOOP_PROMPTS"); p != nil {
		a := abs(cwd, *p)
		l.Prompts = &a
	}
	if err := l.validate(func(key string) string { return "AGENTLOOP_" + strings.ToUpper(key) }); err != nil {
		return nil, err
	}
	return l, nil
}

// settings are the resolved settings of one invocation.
type settings struct {
	Procedure string
	Resume    bool
	Workspace string
	// StateDir holds the procedure's checkpoints and its state summary.
	StateDir         string
	AICmd            string
	MaxIterations    int
	FailureThreshold int
	TokenBudget      int
	Gates            []string
	Context          []string
	Prompts          string
	// AITimeout bounds each run of the AI CLI; 0 means no bound.
	AITimeout time.Duration
	// MaxTime bounds the loop's wall time; 0 means no bound.
	MaxTime time.Duration
	// AIOutput is the format of the AI CLI's output (outputFormats).
	AIOutput string
	// MaxCost (US dollars) and MaxTokens bound the loop's spending; 0
	// means no bound.
	MaxCost   float64
	MaxTokens int64
	// DoneMarker and DoneFile (absolute) are how the AI CLI says the work
	// is done; "" when not configured.
	DoneMarker, DoneFile string
	// GateTimeout bounds each run of a quality gate; 0 means no bound.
	GateTimeout time.Duration
	// Git is gitOff, gitCommit or gitStash.
	Git           string
	DryRun, Fresh bool
	Verbose       bool
	// JSON moves the progress lines to stderr and writes the final result
	// as JSON to stdout.
	JSON    bool
	LogFile string
	// LimitsFromFlags is true when --max-iterations or --failure-threshold
	// was given: a resume then uses them instead of the saved ones.
	LimitsFromFlags bool
	// ResumeHint is the command that resumes the procedure.
	ResumeHint string
	// flags are the settings given on the command line.
	flags *layer
}

// resolve applies the precedence of seed 004: command line > environment >
// workspace config > global config > defaults, where within one config file
// the procedure's own settings (procedures.<name>) come before the file's
// top-level ones.
func resolve(inv *invocation, getenv func(string) string, cwd string) (*settings, error) {
	s := &settings{
		Procedure: inv.procedure,
		Resume:    inv.resume,
		DryRun:    inv.dryRun,
		Fresh:     inv.fresh,
		Verbose:   inv.verbose,
		JSON:      inv.json,
		LogFile:   inv.logFile,
		flags:     &inv.flags,
	}
	s.Workspace = inv.workspace
	if s.Workspace == "" {
		s.Workspace = abs(cwd, getenv("AGENTLOOP_WORKSPACE"))
	}
	if s.Workspace == "" {
		s.Workspace = cwd
	}
	if fi, err := os.Stat(s.Workspace); err != nil || !fi.IsDir() {
		return nil, usagef("workspace %s is not a directory", s.Workspace)
	}
	s.StateDir = filepath.Join(s.Workspace, ".agentloop", "state")
	s.ResumeHint = "agentloop resume " + s.Procedure
	if inv.workspace != "" && filepath.Clean(inv.workspace) != filepath.Clean(cwd) {
		s.ResumeHint += " --workspace " + s.Workspace
	}

	env, err := envLayer(getenv, cwd)
	if err != nil {
		return nil, err
	}
	ws, err := loadConfig(filepath.Join(s.Workspace, ".agentloop", "config.json"), s.Workspace)
	if err != nil {
		return nil, err
	}
	global, err := loadConfig(globalConfigPath(getenv), s.Workspace)
	if err != nil {
		return nil, err
	}
	layers := []*layer{&inv.flags, env, ws.procedure(s.Procedure), &ws.layer, global.procedure(s.Procedure), &global.layer}

	s.AICmd = first(layers, func(l *layer) *string { return l.AICmd }, "")
	s.MaxIterations = first(layers, func(l *layer) *int { return l.MaxIterations }, 0)
	s.FailureThreshold = first(layers, func(l *layer) *int { return l.FailureThreshold }, defaultFailureThreshold)
	s.TokenBudget = first(layers, func(l *layer) *int { return l.TokenBudget }, defaultTokenBudget)
	s.Gates = first(layers, func(l *layer) *[]string { return l.Gates }, nil)
	s.Context = first(layers, func(l *layer) *[]string { return l.Context }, nil)
	s.Prompts = first(layers, func(l *layer) *string { return l.Prompts }, filepath.Join(s.Workspace, "prompts", s.Procedure))
	s.AITimeout = time.Duration(first(layers, func(l *layer) *duration { return l.AITimeout }, duration(defaultAITimeout)))
	s.MaxTime = time.Duration(first(layers, func(l *layer) *duration { return l.MaxTime }, 0))
	s.AIOutput = first(layers, func(l *layer) *string { return l.AIOutput }, formatAuto)
	s.MaxCost = first(layers, func(l *layer) *float64 { return l.MaxCost }, 0)
	s.MaxTokens = first(layers, func(l *layer) *int64 { return l.MaxTokens }, 0)
	s.DoneMarker = first(layers, func(l *layer) *string { return l.DoneMarker }, "")
	s.DoneFile = abs(s.Workspace, first(layers, func(l *layer) *string { return l.DoneFile }, ""))
	s.GateTimeout = time.Duration(first(layers, func(l *layer) *duration { return l.GateTimeout }, 0))
	s.Git = first(layers, func(l *layer) *string { return l.Git }, gitOff)
	s.LimitsFromFlags = inv.flags.MaxIterations != nil || inv.flags.FailureThreshold != nil ||
		inv.flags.MaxCost != nil || inv.flags.MaxTokens != nil || inv.flags.MaxTime != nil
	return s, nil
}

// first returns the value of the first layer that sets the field, or def.
func first[T any](layers []*layer, field func(*layer) *T, def T) T {
	for _, l := range layers {
		if v := field(l); v != nil {
			return *v
		}
	}
	return def
}
