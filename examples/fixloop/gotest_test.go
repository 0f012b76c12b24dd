package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
)

// TestParseFailure covers every documented pattern of failure messages.
func TestParseFailure(t *testing.T) {
	tests := []struct {
		name string
		out  []string
		want gap.TestCaseFailure
	}{
		{"got_want", []string{"=== RUN   TestX\n", "    x_test.go:5: got \"\", want \"ada\"\n", "--- FAIL: TestX (0.00s)\n"},
			gap.TestCaseFailure{Name: "TestX", Expected: `"ada"`, Received: `""`}},
		{"what_got_want", []string{"    x_test.go:5: Add(1, 2): got 4, want 3\n"},
			gap.TestCaseFailure{Name: "TestX", Message: "Add(1, 2)", Expected: "3", Received: "4"}},
		{"got_want_colons", []string{"    x_test.go:5: got: 4 want: 3\n"},
			gap.TestCaseFailure{Name: "TestX", Expected: "3", Received: "4"}},
		{"want_got", []string{"    x_test.go:5: want 3, got 4\n"},
			gap.TestCaseFailure{Name: "TestX", Expected: "3", Received: "4"}},
		{"assign_want", []string{"    x_test.go:8: Claims(123, \"ada\")[\"userId\"] = \"123\", want 123\n"},
			gap.TestCaseFailure{Name: "TestX", Message: `Claims(123, "ada")["userId"]`, Expected: "123", Received: `"123"`}},
		{"expected_received", []string{"    x_test.go:21: expected: \"Hello, ada!\", received: \"Hello ada\"\n"},
			gap.TestCaseFailure{Name: "TestX", Expected: `"Hello, ada!"`, Received: `"Hello ada"`}},
		{"expected_got", []string{"    x_test.go:21: Sum: expected 3, got 4\n"},
			gap.TestCaseFailure{Name: "TestX", Message: "Sum", Expected: "3", Received: "4"}},
		{"expected_actual_case_insensitive", []string{"    x_test.go:21: Expected 3, Actual 4\n"},
			gap.TestCaseFailure{Name: "TestX", Expected: "3", Received: "4"}},
		{"received_expected", []string{"    x_test.go:21: received 4, expected 3\n"},
			gap.TestCaseFailure{Name: "TestX", Expected: "3", Received: "4"}},
		{"testify_lines", []string{
			"    x_test.go:10: \n",
			"        \tError Trace:\t/src/x_test.go:10\n",
			"        \tError:      \tNot equal: \n",
			"        \t            \texpected: 123\n",
			"        \t            \tactual  : \"123\"\n",
			"        \tTest:       \tTestX\n",
		}, gap.TestCaseFailure{Name: "TestX", Message: "Error: Not equal", Expected: "123", Received: `"123"`}},
		{"jest_lines", []string{"    x_test.go:3: token mismatch\n", "        Expected: token to contain userId\n", "        Received: undefined\n"},
			gap.TestCaseFailure{Name: "TestX", Message: "token mismatch", Expected: "token to contain userId", Received: "undefined"}},
		{"no_pattern", []string{"    x_test.go:3: unexpected error: boom\n"},
			gap.TestCaseFailure{Name: "TestX", Message: "unexpected error: boom"}},
		{"forgot_is_not_got", []string{"    x_test.go:3: forgot 1, wanted nothing\n"},
			gap.TestCaseFailure{Name: "TestX", Message: "forgot 1, wanted nothing"}},
		{"panic", []string{"--- FAIL: TestX (0.00s)\n", "panic: runtime error: index out of range [3] with length 1 [recovered]\n"},
			gap.TestCaseFailure{Name: "TestX", Message: "panic: runtime error: index out of range [3] with length 1 [recovered]"}},
		{"no_output", nil, gap.TestCaseFailure{Name: "TestX", Message: "test failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseFailure("TestX", tt.out)); diff != "" {
				t.Errorf("parseFailure (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseTestEvents covers the runs go test -json reports: passing,
// failing subtests, build failures and package failures.
func TestParseTestEvents(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		want   testRun
		events int
	}{
		{"pass", `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p"}`,
			testRun{Result: gap.TestResult{Passed: true}, Passed: 2, Total: 2}, 5},
		{"subtests_reported_not_their_parent", `{"Action":"output","Package":"p","Test":"TestA/one","Output":"    a_test.go:3: got 1, want 2\n"}
{"Action":"fail","Package":"p","Test":"TestA/one"}
{"Action":"pass","Package":"p","Test":"TestA/two"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"fail","Package":"p"}`,
			testRun{Result: gap.TestResult{Failures: []gap.TestCaseFailure{{Name: "TestA/one", Expected: "2", Received: "1"}}}, Passed: 1, Total: 3}, 7},
		{"build_failure", `{"ImportPath":"sandbox [sandbox.test]","Action":"build-output","Output":"# sandbox [sandbox.test]\n"}
{"ImportPath":"sandbox [sandbox.test]","Action":"build-output","Output":"./bad.go:3:23: cannot use \"a\" (untyped string constant) as int value in return statement\n"}
{"ImportPath":"sandbox [sandbox.test]","Action":"build-fail"}
{"Action":"start","Package":"sandbox"}
{"Action":"output","Package":"sandbox","Output":"FAIL\tsandbox [build failed]\n"}
{"Action":"fail","Package":"sandbox","FailedBuild":"sandbox [sandbox.test]"}`,
			testRun{Result: gap.TestResult{Failures: []gap.TestCaseFailure{{Name: "build sandbox",
				Message: `./bad.go:3:23: cannot use "a" (untyped string constant) as int value in return statement`}}}, BuildFailed: true}, 6},
		{"package_failure_outside_tests", `{"Action":"output","Package":"p","Output":"panic: boom in TestMain\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}`,
			testRun{Result: gap.TestResult{Failures: []gap.TestCaseFailure{{Name: "p", Message: "panic: boom in TestMain"}}}}, 3},
		{"no_json", "go: something odd\n",
			testRun{Result: gap.TestResult{Passed: true}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, events := parseTestEvents(strings.NewReader(tt.input))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseTestEvents (-want +got):\n%s", diff)
			}
			if events != tt.events {
				t.Errorf("events = %d, want %d", events, tt.events)
			}
		})
	}
}

// TestCompileErrors: at most three compile errors are listed.
func TestCompileErrors(t *testing.T) {
	out := []string{"# p\n", "a.go:1: e1\n", "a.go:2: e2\n", "a.go:3: e3\n", "a.go:4: e4\n", "a.go:5: e5\n"}
	if diff := cmp.Diff("a.go:1: e1; a.go:2: e2; a.go:3: e3 (and 2 more)", compileErrors(out)); diff != "" {
		t.Error(diff)
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 6, "abc…"},
		{"ééé", 5, "é…"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := clip(tt.in, tt.n)
			if diff := cmp.Diff(tt.want, got); diff != "" || len(got) > tt.n {
				t.Errorf("clip(%q, %d) = %q (%d bytes), want %q", tt.in, tt.n, got, len(got), tt.want)
			}
		})
	}
}

// FuzzParseTestEvents checks the invariants of the `go test -json` parser
// on any input: it does not panic, counts no more events than lines, no
// more passing tests than tests, passes exactly when it reports no failure,
// reports a build failure as a failure, keeps the messages, expected and
// received values within maxMessage bytes, and is deterministic. The seeds
// are the outputs in testdata/gotest (real go test -json runs of the
// sandbox passing, failing and not building, and hand-written subtests,
// testify output, a package panic and raw lines) and two malformed runs.
func FuzzParseTestEvents(f *testing.F) {
	seeds, err := filepath.Glob("testdata/gotest/*")
	if err != nil {
		f.Fatal(err)
	}
	if len(seeds) == 0 {
		f.Fatal("no seed in testdata/gotest")
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"Action":"fail","Package":"p","Test":"TestA/"}`))
	f.Add([]byte("{\n{}\n{\"Action\":\"build-fail\"}"))
	f.Fuzz(func(t *testing.T, input []byte) {
		run, events := parseTestEvents(bytes.NewReader(input))
		if lines := bytes.Count(input, []byte("\n")) + 1; events > lines {
			t.Errorf("%d events from %d lines", events, lines)
		}
		if run.Passed < 0 || run.Passed > run.Total {
			t.Errorf("passed %d of %d tests", run.Passed, run.Total)
		}
		if run.Result.Passed != (len(run.Result.Failures) == 0) {
			t.Errorf("Passed = %t with %d failures", run.Result.Passed, len(run.Result.Failures))
		}
		if run.BuildFailed && run.Result.Passed {
			t.Error("a build failure passes")
		}
		for _, fl := range run.Result.Failures {
			for what, s := range map[string]string{"message": fl.Message, "expected": fl.Expected, "received": fl.Received} {
				if len(s) > maxMessage {
					t.Errorf("%s of %q is %d bytes, want ≤ %d", what, fl.Name, len(s), maxMessage)
				}
			}
		}
		again, n := parseTestEvents(bytes.NewReader(input))
		if diff := cmp.Diff(run, again); diff != "" || n != events {
			t.Errorf("a second parse differs (-first +second, events %d, %d):\n%s", events, n, diff)
		}
	})
}
