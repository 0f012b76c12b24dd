package main

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzConfig feeds arbitrary bytes to the config file parser and the
// environment parser: whatever they hold, each either parses or returns an
// error, and never panics. The seeds run as an ordinary test.
func FuzzConfig(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"max_iterations": 3, "ai_cmd": "claude", "token_budget": 100000}`,
		`{"default_iterations": 2, "procedures": {"build": {"gates": ["go test ./..."], "context": ["a.md"]}}}`,
		`{"failure_threshold": 0, "ai_timeout": "90s", "prompts": "prompts"}`,
		`{"procedures": {"x": null}}`,
		`{"max_iterations": -1}`,
		`{"ai_timeout": "forever"}`,
		`{} {}`,
		`[`,
	} {
		f.Add([]byte(seed), "5", "2m")
	}
	f.Fuzz(func(t *testing.T, data []byte, iterations, timeout string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := loadConfig(path, dir)
		if err == nil && c == nil {
			t.Fatal("nil config without an error")
		}
		env := map[string]string{"AGENTLOOP_MAX_ITERATIONS": iterations, "AGENTLOOP_AI_TIMEOUT": timeout}
		_, _ = envLayer(func(k string) string { return env[k] }, dir)
	})
}
