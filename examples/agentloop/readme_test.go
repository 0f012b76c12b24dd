package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEAICommands (issue 32, item 6): the AI CLI command lines the
// README gives run headless as the CLIs' shipped code requires: Claude
// Code's stream-json with -p needs --verbose; Gemini CLI in a folder it
// has not been told to trust runs headless only with --skip-trust; and the
// README says that Claude Code refuses --dangerously-skip-permissions as
// root. It reads every code span and every line of a code block (a command
// eliding its arguments before its options, "gemini -p ... --output-format
// json", names a format and is skipped). Catches --verbose or --skip-trust dropped from
// a command, or the root caveat dropped.
func TestREADMEAICommands(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	var commands []string
	for i, block := range strings.Split(readme, "```") {
		if i%2 == 1 {
			commands = append(commands, strings.Split(block, "\n")...)
			continue
		}
		for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(block, -1) {
			commands = append(commands, m[1])
		}
	}
	var claude, gemini int
	for _, c := range commands {
		for _, cmd := range regexp.MustCompile(`\b(claude|gemini) [^'"]*`).FindAllString(c, -1) {
			switch {
			case strings.Contains(cmd, "... "):
				continue // "gemini -p ... --output-format json": a format
			case strings.HasPrefix(cmd, "claude "):
				claude++
				if strings.Contains(cmd, "stream-json") && (!strings.Contains(cmd, "--verbose") || !strings.Contains(cmd, "-p")) {
					t.Errorf("%q: with -p, Claude Code's stream-json requires --verbose", cmd)
				}
			case strings.HasPrefix(cmd, "gemini ") && strings.Contains(cmd, "--output-format"):
				gemini++
				if !strings.Contains(cmd, "--skip-trust") {
					t.Errorf("%q: Gemini CLI refuses to run headless in an untrusted folder without --skip-trust", cmd)
				}
			}
		}
	}
	if claude == 0 || gemini == 0 {
		t.Errorf("the README gives %d Claude Code and %d Gemini CLI commands; want both", claude, gemini)
	}
	if strings.Contains(readme, "--dangerously-skip-permissions") &&
		!regexp.MustCompile("refuses `--dangerously-skip-permissions` when run as root").MatchString(readme) {
		t.Error("the README gives --dangerously-skip-permissions without saying Claude Code refuses it as root")
	}
}
