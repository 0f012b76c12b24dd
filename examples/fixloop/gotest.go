package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/refine-go/refine/examples/internal/xcmd"
	"github.com/refine-go/refine/gap"
)

// testRun is the parsed outcome of one `go test -json` run.
type testRun struct {
	// Result is what the loop sees: passed or not, and the failures parsed
	// into actionable parts.
	Result gap.TestResult `json:"result"`
	// Passed and Total count the tests (subtests included) that ran.
	Passed int `json:"passed"`
	Total  int `json:"total"`
	// BuildFailed reports that a package did not compile.
	BuildFailed bool `json:"build_failed,omitempty"`
}

// maxMessage bounds the message kept of a failure.
const maxMessage = 300

// killGrace is how long a cancelled command (an interrupt, --task-timeout)
// and its children have to exit after SIGTERM before they are killed. It
// is shorter than the engine's grace (5 s, see iterate.WithGrace), so that an
// attempt always ends, with its processes, before the state is saved.
const killGrace = xcmd.DefaultGrace

// goEnv is the environment of the go commands run in a working copy: the
// copy is a module of its own, so a go.work around it must not apply.
func goEnv() []string { return append(os.Environ(), "GOWORK=off") }

// runTests runs `go test -json <args>` in dir and parses its events. An
// error means the tests could not be run at all (no go command, bad flags);
// failing tests and build failures are results, not errors.
func runTests(ctx context.Context, dir string, args []string) (testRun, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-json"}, args...)...)
	cmd.Dir = dir
	cmd.Env = goEnv()
	xcmd.Prepare(cmd, killGrace)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := xcmd.Run(cmd)
	if ctx.Err() != nil {
		return testRun{}, context.Cause(ctx)
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		return testRun{}, fmt.Errorf("go test: %w", runErr)
	}
	run, events := parseTestEvents(&stdout)
	if events == 0 && runErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return testRun{}, fmt.Errorf("go test: %w: %s", runErr, firstLines(msg, 3))
	}
	if !run.Result.Passed && len(run.Result.Failures) == 0 && run.Result.Output == "" {
		run.Result.Output = firstLines(strings.TrimSpace(stderr.String()), 10)
	}
	return run, nil
}

// testEvent is one line of `go test -json`: a test2json event, or a build
// event (Action "build-output" or "build-fail", keyed by ImportPath) of the
// build that precedes the tests.
type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
	ImportPath  string
}

// parseTestEvents parses the output of `go test -json` and returns the run
// and the number of JSON events read. Lines that are not JSON are kept as
// raw output.
//
// A failing test is reported by the deepest failing subtests only (a parent
// fails because its subtest did). A package that does not build gives one
// failure named "build <package>" whose message lists its first compile
// errors; a package that fails outside any test (a panic in TestMain, a
// timeout) gives one failure named after the package.
func parseTestEvents(r io.Reader) (testRun, int) {
	type testKey struct{ pkg, test string }
	var (
		run       testRun
		events    int
		lines     = map[testKey][]string{}
		failed    []testKey
		pkgOut    = map[string][]string{}
		pkgFailed []string
		buildOut  = map[string][]string{}
		buildFail []string
		raw       []string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var ev testEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			if s := strings.TrimSpace(string(line)); s != "" {
				raw = append(raw, s)
			}
			continue
		}
		events++
		k := testKey{ev.Package, ev.Test}
		switch ev.Action {
		case "build-output":
			buildOut[ev.ImportPath] = append(buildOut[ev.ImportPath], ev.Output)
		case "build-fail":
			buildFail = append(buildFail, ev.ImportPath)
		case "output":
			if ev.Test != "" {
				lines[k] = append(lines[k], ev.Output)
			} else {
				pkgOut[ev.Package] = append(pkgOut[ev.Package], ev.Output)
			}
		case "pass":
			if ev.Test != "" {
				run.Passed++
				run.Total++
			}
		case "fail":
			if ev.Test != "" {
				run.Total++
				failed = append(failed, k)
			} else if ev.FailedBuild == "" {
				pkgFailed = append(pkgFailed, ev.Package)
			}
		}
	}

	var fs []gap.TestCaseFailure
	for _, ip := range buildFail {
		run.BuildFailed = true
		fs = append(fs, gap.TestCaseFailure{Name: "build " + packageOf(ip), Message: compileErrors(buildOut[ip])})
	}
	for _, k := range failed {
		if slices.ContainsFunc(failed, func(o testKey) bool {
			return o.pkg == k.pkg && strings.HasPrefix(o.test, k.test+"/")
		}) {
			continue // reported by its failing subtest
		}
		fs = append(fs, parseFailure(k.test, lines[k]))
	}
	for _, pkg := range pkgFailed {
		if slices.ContainsFunc(failed, func(o testKey) bool { return o.pkg == pkg }) {
			continue
		}
		fs = append(fs, gap.TestCaseFailure{Name: pkg, Message: packageFailure(pkgOut[pkg])})
	}
	run.Result.Failures = fs
	run.Result.Passed = len(fs) == 0
	if !run.Result.Passed && len(fs) == 0 {
		run.Result.Output = firstLines(strings.Join(raw, "\n"), 10)
	}
	return run, events
}

// packageOf returns the package of a build's import path, without the
// test variant: "sandbox [sandbox.test]" → "sandbox".
func packageOf(importPath string) string {
	if i := strings.Index(importPath, " ["); i >= 0 {
		return importPath[:i]
	}
	return importPath
}

// compileErrors joins the first three compile errors of a build's output.
func compileErrors(out []string) string {
	var errs []string
	more := 0
	for _, l := range out {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if len(errs) == 3 {
			more++
			continue
		}
		errs = append(errs, l)
	}
	msg := strings.Join(errs, "; ")
	if more > 0 {
		msg += fmt.Sprintf(" (and %d more)", more)
	}
	if msg == "" {
		msg = "build failed"
	}
	return clip(msg, maxMessage)
}

// packageFailure returns the first informative line of a package's own
// output.
func packageFailure(out []string) string {
	for _, l := range out {
		l = strings.TrimSpace(l)
		if l == "" || l == "FAIL" || strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "exit status") {
			continue
		}
		return clip(l, maxMessage)
	}
	return "package failed"
}

// The patterns parseFailure recognises in a failing test's messages, tried
// in this order on each message line (case-insensitive). WHAT is the text
// before the pattern and becomes the failure's Message.
//
//	WHAT got X, want Y          Go convention ("got: X, want: Y" too)
//	WHAT want X, got Y
//	WHAT = X, want Y            Go convention: "Add(1, 2) = 4, want 3"
//	WHAT expected X, received Y also "expected: X, got: Y", "expected X, actual Y"
//	WHAT received X, expected Y also "actual X, expected Y"
//
// and, over separate lines (as testify and Jest print them), with WHAT the
// line before the expected one:
//
//	expected: X                 also "want: X"
//	received: Y                 also "actual: Y", "got: Y"
var (
	sep         = `^(.*?)[\s:=,;-]*`
	reGotWant   = regexp.MustCompile(`(?i)` + sep + `\bgot:?\s+(.+?),?\s+want(?:ed)?:?\s+(.+)$`)
	reWantGot   = regexp.MustCompile(`(?i)` + sep + `\bwant(?:ed)?:?\s+(.+?),?\s+got:?\s+(.+)$`)
	reAssign    = regexp.MustCompile(`(?i)^(.+?)\s+=\s+(.+?),\s+want(?:ed)?:?\s+(.+)$`)
	reExpRecv   = regexp.MustCompile(`(?i)` + sep + `\bexpected:?\s+(.+?),?\s+(?:received|actual|got):?\s+(.+)$`)
	reRecvExp   = regexp.MustCompile(`(?i)` + sep + `\b(?:received|actual):?\s+(.+?),?\s+expected:?\s+(.+)$`)
	reExpLine   = regexp.MustCompile(`(?i)^(?:expected|want)\s*:\s*(.+)$`)
	reRecvLine  = regexp.MustCompile(`(?i)^(?:received|actual|got)\s*:\s*(.+)$`)
	reLocation  = regexp.MustCompile(`^[\w./\\-]+\.go:\d+: ?`)
	reTestFrame = regexp.MustCompile(`^(?:=== (?:RUN|PAUSE|CONT|NAME)|--- (?:FAIL|PASS|SKIP):)`)
)

// single lists the one-line patterns with the submatch indexes of the
// expected and received values.
var single = []struct {
	re                 *regexp.Regexp
	expected, received int
}{
	{reGotWant, 3, 2},
	{reWantGot, 2, 3},
	{reAssign, 3, 2},
	{reExpRecv, 2, 3},
	{reRecvExp, 3, 2},
}

// parseFailure turns the output of a failing test into a failure: its
// messages (without the "=== RUN" and "--- FAIL" frames and the
// "file_test.go:12: " locations) parsed with the patterns above. When no
// pattern matches, Message holds the first message line. Runs of spaces in
// the Message are collapsed; Expected and Received are kept as printed.
func parseFailure(name string, out []string) gap.TestCaseFailure {
	f := gap.TestCaseFailure{Name: name}
	var msgs []string
	for _, l := range out {
		l = strings.TrimSpace(l)
		if reTestFrame.MatchString(l) {
			continue
		}
		if l = strings.TrimSpace(reLocation.ReplaceAllString(l, "")); l != "" {
			msgs = append(msgs, l)
		}
	}
	for _, m := range msgs {
		for _, p := range single {
			if sm := p.re.FindStringSubmatch(m); sm != nil {
				f.Expected = clip(strings.TrimSpace(sm[p.expected]), maxMessage)
				f.Received = clip(strings.TrimSpace(sm[p.received]), maxMessage)
				f.Message = message(sm[1])
				return f
			}
		}
	}
	exp, recv, what := "", "", ""
	for i, m := range msgs {
		if sm := reExpLine.FindStringSubmatch(m); sm != nil && exp == "" {
			exp = sm[1]
			if i > 0 && reRecvLine.FindStringSubmatch(msgs[i-1]) == nil {
				what = msgs[i-1]
			}
		} else if rm := reRecvLine.FindStringSubmatch(m); rm != nil && recv == "" {
			recv = rm[1]
		}
	}
	if exp != "" && recv != "" {
		f.Expected, f.Received = clip(strings.TrimSpace(exp), maxMessage), clip(strings.TrimSpace(recv), maxMessage)
		f.Message = message(what)
		return f
	}
	if len(msgs) > 0 {
		f.Message = message(msgs[0])
	} else {
		f.Message = "test failed"
	}
	return f
}

// message tidies the text of a failure message: spaces collapsed, the
// separators before the expected value trimmed, at most maxMessage bytes.
func message(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return clip(strings.TrimRight(s, ":=,;- "), maxMessage)
}

// clip cuts s to at most n bytes, ending in "…", at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	cut := n - len(ell)
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + ell
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	if len(ls) > n {
		ls = append(ls[:n], "…")
	}
	return strings.Join(ls, "\n")
}
