package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/refine-go/refine/examples/internal/e2etest"
	"github.com/refine-go/refine/examples/research/study"
)

// binary is the research command built once for the tests.
var binary string

func TestMain(m *testing.M) { e2etest.Main(m, "research", &binary) }

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// binaryCommand returns the command that runs the research binary with
// args, as runBinary does: with emoji, without NO_COLOR.
func binaryCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append(slices.Clip(args), "--emoji=always")...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") })
	return cmd
}

// runBinary runs the research binary with args in the package directory,
// with emoji (the seed's displays) unless args say otherwise, and without
// NO_COLOR from the test's environment unless env sets it.
func runBinary(t *testing.T, env []string, args ...string) result {
	t.Helper()
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--emoji") }) {
		args = append(slices.Clip(args), "--emoji=always")
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") }), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// scenarioArgs returns the flags that run a fixture scenario of testdata.
func scenarioArgs(t *testing.T, name, state string, extra ...string) []string {
	t.Helper()
	args := []string{"--root", filepath.Join("testdata", name, "src"), "--questions", filepath.Join("testdata", name, "questions.txt"), "--state", state}
	return append(args, extra...)
}

// runJSON runs the binary with --json and decodes the report.
func runJSON(t *testing.T, env []string, args ...string) (*study.Report, result) {
	t.Helper()
	r := runBinary(t, env, append(args, "--json")...)
	var rep study.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("decoding the JSON report (exit %d): %v\nstdout:\n%s\nstderr:\n%s", r.code, err, r.stdout, r.stderr)
	}
	return &rep, r
}

// checkCitations verifies that every citation of the report names a line
// that exists: the file under the root has at least that many lines.
func checkCitations(t *testing.T, rep *study.Report) {
	t.Helper()
	lines := map[string]int{}
	count := func(file string) int {
		if n, ok := lines[file]; ok {
			return n
		}
		src, err := os.ReadFile(filepath.Join(rep.Root, filepath.FromSlash(file)))
		n := -1
		if err == nil {
			n = countLines(src)
		}
		lines[file] = n
		return n
	}
	check := func(where, c string) {
		file, line, ok := splitCitation(c)
		if !ok {
			t.Errorf("%s: citation %q is not file:line", where, c)
			return
		}
		n := count(file)
		switch {
		case n < 0:
			t.Errorf("%s: citation %s: file %s does not exist under %s", where, c, file, rep.Root)
		case line < 1 || line > n:
			t.Errorf("%s: citation %s: line %d outside 1..%d", where, c, line, n)
		}
	}
	for _, f := range rep.Findings {
		if len(f.Citations) == 0 {
			t.Errorf("finding %s has no citation", f.ID)
		}
		for _, c := range f.Citations {
			check("finding "+f.ID, c)
		}
	}
	for i, c := range rep.Citations {
		check(fmt.Sprintf("citation [%d]", i+1), c)
	}
	for _, q := range rep.Questions {
		for _, a := range q.Answer {
			for _, c := range a.Citations {
				check("answer to question "+fmt.Sprint(q.Number), c)
			}
		}
	}
}

// roles returns the agent and gap of every task of the report's log, as
// "iteration:Agent/Gap".
func roles(rep *study.Report) []string {
	var out []string
	for _, l := range rep.Log {
		s := fmt.Sprintf("%d:%s/%s", l.Iteration, l.Agent, l.Gap)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func hasLine(out, want string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}

// countLines returns the number of lines of src, a last line without a
// newline included (the test's own count, independent of the index's).
func countLines(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
		n++
	}
	return n
}

// splitCitation splits a "file:line" citation.
func splitCitation(c string) (file string, line int, ok bool) {
	i := strings.LastIndexByte(c, ':')
	if i <= 0 {
		return "", 0, false
	}
	line, err := strconv.Atoi(c[i+1:])
	if err != nil || line < 1 {
		return "", 0, false
	}
	return c[:i], line, true
}
