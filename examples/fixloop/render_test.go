package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var cmpSorted = cmp.Transformer("sorted", func(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
})

var sample = obj{{"decision", obj{
	{"action", "escalate"},
	{"iteration", 3},
	{"severity", 0.12345},
	{"fixable", true},
	{"tokens", int64(1200)},
	{"summary", block("line 1\nline \"2\"")},
	{"single", block("one line")},
	{"items", list{"a", `b "quoted"`}},
	{"empty", list{}},
	{"triggers", list{obj{{"type", "test_failure"}, {"targets", list{"TestA"}}}}},
	{"none", obj{}},
}}}

func TestRenderYAML(t *testing.T) {
	var b bytes.Buffer
	renderYAML(&b, sample, 0)
	want := strings.Join([]string{
		`decision:`,
		`  action: "escalate"`,
		`  iteration: 3`,
		`  severity: 0.123`,
		`  fixable: true`,
		`  tokens: 1200`,
		`  summary: |`,
		`    line 1`,
		`    line "2"`,
		`  single: "one line"`,
		`  items:`,
		`    - "a"`,
		`    - "b \"quoted\""`,
		`  empty: []`,
		`  triggers:`,
		`    - type: "test_failure"`,
		`      targets:`,
		`        - "TestA"`,
		`  none: {}`,
		``,
	}, "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("YAML (-want +got):\n%s", diff)
	}
}

func TestRenderJSON(t *testing.T) {
	var b bytes.Buffer
	renderJSON(&b, sample)
	want := `{"decision":{"action":"escalate","iteration":3,"severity":0.123,"fixable":true,"tokens":1200,` +
		`"summary":"line 1\nline \"2\"","single":"one line","items":["a","b \"quoted\""],"empty":[],` +
		`"triggers":[{"type":"test_failure","targets":["TestA"]}],"none":{}}}`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

// TestShellQuote: plain paths stay as they are, others are single-quoted.
func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/tmp/fixloop-123", "/tmp/fixloop-123"},
		{"/tmp/my dir", "'/tmp/my dir'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, shellQuote(tt.in)); diff != "" {
				t.Error(diff)
			}
		})
	}
}
