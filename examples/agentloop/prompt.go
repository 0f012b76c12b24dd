package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// phases are the OODA phase files, in prompt order, with their headings.
var phases = [...]struct{ file, heading string }{
	{"observe.md", "OBSERVE"},
	{"orient.md", "ORIENT"},
	{"decide.md", "DECIDE"},
	{"act.md", "ACT"},
}

// assemblePrompt builds the prompt of one iteration from the four phase files
// in dir and the context files (seed 004's prompt composition):
//
//	# OODA Loop Iteration
//
//	## OBSERVE
//	<observe.md>
//
//	## ORIENT
//	...
//	## CONTEXT
//
//	### <context file>
//	<its contents>
//
// It is called before every iteration, so edits to the files between
// iterations reach the next prompt. workspace shortens the context headings.
func assemblePrompt(dir string, context []string, workspace string) (string, error) {
	var b strings.Builder
	b.WriteString("# OODA Loop Iteration\n")
	for _, p := range phases {
		data, err := os.ReadFile(filepath.Join(dir, p.file))
		if err != nil {
			return "", fmt.Errorf("reading the %s prompt: %w", strings.ToLower(p.heading), err)
		}
		b.WriteString("\n## ")
		b.WriteString(p.heading)
		b.WriteByte('\n')
		writeBlock(&b, data)
	}
	if len(context) > 0 {
		b.WriteString("\n## CONTEXT\n")
		for _, path := range context {
			data, err := os.ReadFile(path)
			if err != nil {
				return "", fmt.Errorf("reading a context file: %w", err)
			}
			name := path
			if rel, err := filepath.Rel(workspace, path); err == nil && !strings.HasPrefix(rel, "..") {
				name = rel
			}
			b.WriteString("\n### ")
			b.WriteString(name)
			b.WriteByte('\n')
			writeBlock(&b, data)
		}
	}
	return b.String(), nil
}

// writeBlock writes data with exactly one trailing newline.
func writeBlock(b *strings.Builder, data []byte) {
	data = bytes.TrimRight(data, "\r\n")
	b.Write(data)
	b.WriteByte('\n')
}
