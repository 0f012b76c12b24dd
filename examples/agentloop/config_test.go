package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// resolved is what the precedence tests compare.
type resolved struct {
	AICmd            string
	MaxIterations    int
	FailureThreshold int
	TokenBudget      int
	Gates            []string
	Context          []string
	Prompts          string
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestResolve covers seed 004's configuration precedence: CLI flags >
// environment > workspace config > global config > defaults, and "max
// iterations defaults to procedure config, then global config, then 0".
func TestResolve(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		workspace string // <workspace>/.agentloop/config.json
		global    string // $AGENTLOOP_GLOBAL_CONFIG
		want      func(ws string) resolved
	}{
		{
			name: "seed004_defaults_max_iterations_0",
			want: func(ws string) resolved {
				return resolved{FailureThreshold: 3, TokenBudget: 100000, Prompts: filepath.Join(ws, "prompts", "build")}
			},
		},
		{
			name:   "seed004_max_iterations_from_global_config",
			global: `{"max_iterations": 7}`,
			want: func(ws string) resolved {
				return resolved{MaxIterations: 7, FailureThreshold: 3, TokenBudget: 100000, Prompts: filepath.Join(ws, "prompts", "build")}
			},
		},
		{
			name:   "seed004_procedure_config_before_global_setting",
			global: `{"max_iterations": 7, "procedures": {"build": {"max_iterations": 4}}}`,
			want: func(ws string) resolved {
				return resolved{MaxIterations: 4, FailureThreshold: 3, TokenBudget: 100000, Prompts: filepath.Join(ws, "prompts", "build")}
			},
		},
		{
			name:      "seed004_procedure_config_in_workspace_before_its_top_level",
			workspace: `{"max_iterations": 5, "procedures": {"build": {"max_iterations": 2}}}`,
			global:    `{"max_iterations": 7}`,
			want: func(ws string) resolved {
				return resolved{MaxIterations: 2, FailureThreshold: 3, TokenBudget: 100000, Prompts: filepath.Join(ws, "prompts", "build")}
			},
		},
		{
			name:      "seed004_workspace_config_over_global_config",
			workspace: `{"max_iterations": 5, "ai_cmd": "ws-ai"}`,
			global:    `{"ai_cmd": "global-ai", "procedures": {"build": {"max_iterations": 4}}, "failure_threshold": 6}`,
			want: func(ws string) resolved {
				return resolved{AICmd: "ws-ai", MaxIterations: 5, FailureThreshold: 6, TokenBudget: 100000, Prompts: filepath.Join(ws, "prompts", "build")}
			},
		},
		{
			name:      "seed004_default_iterations_0_means_unlimited",
			workspace: `{"default_iterations": 0}`,
			global:    `{"max_iterations": 9}`,
			want: func(ws string) resolved {
				return resolved{MaxIterations: 0, FailureThreshold: 3, TokenBudget: 100000, Prompts: filepath.Join(ws, "prompts", "build")}
			},
		},
		{
			name:      "other_procedures_config_ignored",
			workspace: `{"procedures": {"deploy": {"max_iterations": 8, "ai_cmd": "deploy-ai"}}}`,
			want: func(ws string) resolved {
				return resolved{FailureThreshold: 3, TokenBudget: 100000, Prompts: filepath.Join(ws, "prompts", "build")}
			},
		},
		{
			name:      "seed004_environment_over_workspace_config",
			env:       map[string]string{"AGENTLOOP_MAX_ITERATIONS": "6", "AGENTLOOP_AI_CMD": "env-ai", "AGENTLOOP_FAILURE_THRESHOLD": "2", "AGENTLOOP_TOKEN_BUDGET": "500", "AGENTLOOP_PROMPTS": "p"},
			workspace: `{"ai_cmd": "ws-ai", "failure_threshold": 4, "token_budget": 9, "prompts": "q", "procedures": {"build": {"max_iterations": 2}}}`,
			want: func(ws string) resolved {
				return resolved{AICmd: "env-ai", MaxIterations: 6, FailureThreshold: 2, TokenBudget: 500, Prompts: filepath.Join(ws, "p")}
			},
		},
		{
			name:      "seed004_flags_over_environment",
			args:      []string{"--ai-cmd", "flag-ai", "--max-iterations", "3", "--failure-threshold", "5", "--token-budget", "700", "--prompts", "fp", "--gate", "make lint", "--context", "c.md"},
			env:       map[string]string{"AGENTLOOP_MAX_ITERATIONS": "6", "AGENTLOOP_AI_CMD": "env-ai", "AGENTLOOP_FAILURE_THRESHOLD": "2", "AGENTLOOP_TOKEN_BUDGET": "500"},
			workspace: `{"gates": ["go test ./..."], "context": ["AGENTS.md"]}`,
			want: func(ws string) resolved {
				return resolved{AICmd: "flag-ai", MaxIterations: 3, FailureThreshold: 5, TokenBudget: 700,
					Gates: []string{"make lint"}, Context: []string{filepath.Join(ws, "c.md")}, Prompts: filepath.Join(ws, "fp")}
			},
		},
		{
			name:      "config_lists_and_paths_relative_to_workspace",
			workspace: `{"gates": ["go vet ./...", "go test ./..."], "context": ["AGENTS.md", "/abs/notes.md"], "procedures": {"build": {"prompts": "ooda/build"}}}`,
			want: func(ws string) resolved {
				return resolved{FailureThreshold: 3, TokenBudget: 100000, Gates: []string{"go vet ./...", "go test ./..."},
					Context: []string{filepath.Join(ws, "AGENTS.md"), "/abs/notes.md"}, Prompts: filepath.Join(ws, "ooda", "build")}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			home := t.TempDir()
			env := map[string]string{"AGENTLOOP_GLOBAL_CONFIG": filepath.Join(home, "global.json")}
			for k, v := range tt.env {
				env[k] = v
			}
			if tt.workspace != "" {
				writeFile(t, filepath.Join(ws, ".agentloop", "config.json"), tt.workspace)
			}
			if tt.global != "" {
				writeFile(t, filepath.Join(home, "global.json"), tt.global)
			}
			inv, err := parseArgs(append(append([]string{}, tt.args...), "build"), ws, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			s, err := resolve(inv, func(k string) string { return env[k] }, ws)
			if err != nil {
				t.Fatal(err)
			}
			got := resolved{s.AICmd, s.MaxIterations, s.FailureThreshold, s.TokenBudget, s.Gates, s.Context, s.Prompts}
			if diff := cmp.Diff(tt.want(ws), got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveAITimeout: the AI timeout has the precedence of the other
// settings: flag > environment > workspace config (its procedure first) >
// global config > none.
func TestResolveAITimeout(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		env       string // AGENTLOOP_AI_TIMEOUT
		workspace string
		global    string
		want      time.Duration
	}{
		// Issue 32: an AI CLI can wait forever (Codex offline); catches a
		// default of none.
		{name: "30m_by_default", want: 30 * time.Minute},
		{name: "global_config", global: `{"ai_timeout": "1m"}`, want: time.Minute},
		{name: "global_procedure_over_global_top_level", global: `{"ai_timeout": "1m", "procedures": {"build": {"ai_timeout": "2m"}}}`, want: 2 * time.Minute},
		{name: "workspace_over_global", workspace: `{"ai_timeout": "90s"}`, global: `{"procedures": {"build": {"ai_timeout": "2m"}}}`, want: 90 * time.Second},
		{name: "environment_over_workspace", env: "45s", workspace: `{"procedures": {"build": {"ai_timeout": "90s"}}}`, want: 45 * time.Second},
		{name: "flag_over_environment", args: []string{"--ai-timeout", "10m"}, env: "45s", want: 10 * time.Minute},
		{name: "flag_0_turns_it_off", args: []string{"--ai-timeout", "0"}, workspace: `{"ai_timeout": "90s"}`, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, home := t.TempDir(), t.TempDir()
			env := map[string]string{"AGENTLOOP_GLOBAL_CONFIG": filepath.Join(home, "global.json"), "AGENTLOOP_AI_TIMEOUT": tt.env}
			if tt.workspace != "" {
				writeFile(t, filepath.Join(ws, ".agentloop", "config.json"), tt.workspace)
			}
			if tt.global != "" {
				writeFile(t, filepath.Join(home, "global.json"), tt.global)
			}
			inv, err := parseArgs(append(append([]string{}, tt.args...), "build"), ws, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			s, err := resolve(inv, func(k string) string { return env[k] }, ws)
			if err != nil {
				t.Fatal(err)
			}
			if s.AITimeout != tt.want {
				t.Errorf("AITimeout = %s, want %s", s.AITimeout, tt.want)
			}
		})
	}
}

// TestGlobalConfigPath: AGENTLOOP_GLOBAL_CONFIG, then XDG_CONFIG_HOME, then
// ~/.config.
func TestGlobalConfigPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"override", map[string]string{"AGENTLOOP_GLOBAL_CONFIG": "/etc/al.json", "XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/etc/al.json"},
		{"xdg", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/agentloop/config.json"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.config/agentloop/config.json"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := globalConfigPath(func(k string) string { return tt.env[k] })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveErrors: invalid settings are usage errors naming where they
// come from.
func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		workspace string
		want      string
	}{
		{"env_not_a_number", map[string]string{"AGENTLOOP_MAX_ITERATIONS": "ten"}, "", `AGENTLOOP_MAX_ITERATIONS: "ten" is not a number`},
		{"env_negative", map[string]string{"AGENTLOOP_MAX_ITERATIONS": "-1"}, "", "AGENTLOOP_MAX_ITERATIONS must be 0 (unlimited) or more, got -1"},
		{"env_threshold_0", map[string]string{"AGENTLOOP_FAILURE_THRESHOLD": "0"}, "", "AGENTLOOP_FAILURE_THRESHOLD must be at least 1, got 0"},
		{"config_bad_json", nil, `{"max_iterations": }`, "config WS/.agentloop/config.json: invalid character '}' looking for beginning of value"},
		{"config_unknown_key", nil, `{"max_iteration": 3}`, `config WS/.agentloop/config.json: json: unknown field "max_iteration"`},
		{"config_procedure_value", nil, `{"procedures": {"build": {"token_budget": 0}}}`, "config WS/.agentloop/config.json: procedures.build.token_budget must be at least 1, got 0"},
		{"config_empty_gate", nil, `{"gates": [""]}`, "config WS/.agentloop/config.json: gates must not hold an empty command"},
		{"env_ai_timeout_not_a_duration", map[string]string{"AGENTLOOP_AI_TIMEOUT": "10"}, "", `AGENTLOOP_AI_TIMEOUT: "10" is not a duration (such as 10m)`},
		{"env_ai_timeout_negative", map[string]string{"AGENTLOOP_AI_TIMEOUT": "-1s"}, "", "AGENTLOOP_AI_TIMEOUT must be 0 (none) or more, got -1s"},
		{"config_ai_timeout_number", nil, `{"ai_timeout": 60}`, `config WS/.agentloop/config.json: a duration is a string such as "10m", got 60`},
		{"config_ai_timeout_bad", nil, `{"procedures": {"build": {"ai_timeout": "soon"}}}`, `config WS/.agentloop/config.json: "soon" is not a duration (such as "10m")`},
		{"config_ai_timeout_negative", nil, `{"ai_timeout": "-1m"}`, "config WS/.agentloop/config.json: ai_timeout must be 0 (none) or more, got -1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			env := map[string]string{"AGENTLOOP_GLOBAL_CONFIG": filepath.Join(ws, "none.json")}
			for k, v := range tt.env {
				env[k] = v
			}
			if tt.workspace != "" {
				writeFile(t, filepath.Join(ws, ".agentloop", "config.json"), tt.workspace)
			}
			inv, err := parseArgs([]string{"build"}, ws, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			_, err = resolve(inv, func(k string) string { return env[k] }, ws)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want a *usageError", err)
			}
			want := tt.want
			if len(want) > 9 && want[:9] == "config WS" {
				want = "config " + ws + want[9:]
			}
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseArgs: the seed's command lines, flags before or after the
// procedure, and usage errors.
func TestParseArgs(t *testing.T) {
	type parsed struct {
		Resume    bool
		Procedure string
		Max       *int
		DryRun    bool
		Fresh     bool
		Gates     *[]string
	}
	three := 3
	tests := []struct {
		name    string
		args    []string
		want    parsed
		wantErr string
	}{
		{name: "seed004_example1_flags_after_procedure", args: []string{"build", "--max-iterations", "3"}, want: parsed{Procedure: "build", Max: &three}},
		{name: "flags_before_procedure", args: []string{"-max-iterations=3", "build"}, want: parsed{Procedure: "build", Max: &three}},
		{name: "seed004_example3_resume", args: []string{"resume", "build"}, want: parsed{Resume: true, Procedure: "build"}},
		{name: "seed004_example4_dry_run", args: []string{"build", "--dry-run"}, want: parsed{Procedure: "build", DryRun: true}},
		{name: "fresh", args: []string{"build", "--fresh"}, want: parsed{Procedure: "build", Fresh: true}},
		{name: "gates_repeat", args: []string{"--gate", "a", "build", "--gate", "b"}, want: parsed{Procedure: "build", Gates: &[]string{"a", "b"}}},
		{name: "no_procedure", args: nil, wantErr: "missing the procedure to run, e.g. agentloop build"},
		{name: "resume_without_procedure", args: []string{"resume"}, wantErr: "resume needs the procedure to resume, e.g. agentloop resume build"},
		{name: "extra_argument", args: []string{"build", "now"}, wantErr: `unexpected arguments after procedure "build": now`},
		{name: "unknown_flag", args: []string{"build", "--bogus"}, wantErr: "flag provided but not defined: -bogus"},
		{name: "negative_max", args: []string{"build", "--max-iterations", "-1"}, wantErr: "--max-iterations must be 0 (unlimited) or more, got -1"},
		{name: "threshold_0", args: []string{"build", "--failure-threshold", "0"}, wantErr: "--failure-threshold must be at least 1, got 0"},
		{name: "empty_gate", args: []string{"build", "--gate", ""}, wantErr: `invalid value "" for flag -gate: must not be empty`},
		{name: "bad_procedure_name", args: []string{"../x"}, wantErr: `invalid procedure name "../x": checkpoint: invalid session name "../x": contains a path separator`},
		{name: "resume_fresh", args: []string{"resume", "build", "--fresh"}, wantErr: "--fresh starts over; it cannot be combined with resume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv, err := parseArgs(tt.args, "/cwd", io.Discard)
			if tt.wantErr != "" {
				var ue *usageError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a *usageError", err)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := parsed{inv.resume, inv.procedure, inv.flags.MaxIterations, inv.dryRun, inv.fresh, inv.flags.Gates}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAssemblePrompt: seed 004's prompt composition, four phase files and
// optional context.
func TestAssemblePrompt(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"observe.md": "look\n", "orient.md": "think", "decide.md": "choose\n\n", "act.md": "do\n"} {
		writeFile(t, filepath.Join(dir, "p", name), text)
	}
	writeFile(t, filepath.Join(dir, "AGENTS.md"), "rules\n")
	writeFile(t, filepath.Join(t.TempDir(), "elsewhere.md"), "x")

	got, err := assemblePrompt(filepath.Join(dir, "p"), nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "# OODA Loop Iteration\n\n## OBSERVE\nlook\n\n## ORIENT\nthink\n\n## DECIDE\nchoose\n\n## ACT\ndo\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seed004_four_phases (-want +got):\n%s", diff)
	}

	got, err = assemblePrompt(filepath.Join(dir, "p"), []string{filepath.Join(dir, "AGENTS.md")}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want+"\n## CONTEXT\n\n### AGENTS.md\nrules\n", got); diff != "" {
		t.Errorf("seed004_context_section (-want +got):\n%s", diff)
	}

	if err := os.Remove(filepath.Join(dir, "p", "decide.md")); err != nil {
		t.Fatal(err)
	}
	_, err = assemblePrompt(filepath.Join(dir, "p"), nil, dir)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing phase file: err = %v, want fs.ErrNotExist", err)
	}
}

// TestREADMEConfig (issue 32): the README's own example config works: read
// from the README, it resolves for the procedures it names, and
// default_iterations inside procedures.<name> sets that procedure's
// iteration limit. Catches default_iterations refused there as an unknown
// field, or ignored.
func TestREADMEConfig(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var config string
	for _, block := range strings.Split(string(readme), "```json\n")[1:] {
		block = block[:strings.Index(block, "```")]
		if strings.Contains(block, `"procedures"`) {
			config = block
			break
		}
	}
	if config == "" {
		t.Fatal("README has no example config with procedures")
	}
	for _, tt := range []struct {
		procedure string
		want      int
	}{{"build", 10}, {"plan", 1}, {"other", 5}} {
		ws := t.TempDir()
		writeFile(t, filepath.Join(ws, ".agentloop", "config.json"), config)
		inv, err := parseArgs([]string{tt.procedure}, ws, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"AGENTLOOP_GLOBAL_CONFIG": filepath.Join(ws, "none.json")}
		s, err := resolve(inv, func(k string) string { return env[k] }, ws)
		if err != nil {
			t.Fatalf("the README's config: %v", err)
		}
		if s.MaxIterations != tt.want {
			t.Errorf("%s: MaxIterations = %d, want %d", tt.procedure, s.MaxIterations, tt.want)
		}
	}
}
