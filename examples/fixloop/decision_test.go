package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/gap"
)

// TestParseFeedback: the summary is the first line, the items the lines
// starting "- ".
func TestParseFeedback(t *testing.T) {
	tests := []struct {
		name, text string
		summary    string
		items      []string
	}{
		{"empty", "", "", nil},
		{"summary_only", "Test failed: x", "Test failed: x", nil},
		{"summary_and_items", "Test failed: x (2 issues)\n- TestA: Expected: 1, Received: 2\n- claims.go: not gofmt-formatted",
			"Test failed: x (2 issues)", []string{"TestA: Expected: 1, Received: 2", "claims.go: not gofmt-formatted"}},
		{"other_lines_ignored", "S\n- a\ncontinued\n-b\n- c", "S", []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summary, items := parseFeedback(tt.text)
			if diff := cmp.Diff([]any{tt.summary, tt.items}, []any{summary, items}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseFeedback: feedback rendered from a summary and items (none
// holding a newline) parses back to them.
func FuzzParseFeedback(f *testing.F) {
	f.Add("Test failed: x", "TestA: Expected: 1, Received: 2\nclaims.go: not gofmt-formatted")
	f.Add("", "")
	f.Add("S", "- nested\n")
	f.Fuzz(func(t *testing.T, summary, itemLines string) {
		summary = strings.ReplaceAll(summary, "\n", " ")
		var items []string
		if itemLines != "" {
			items = strings.Split(itemLines, "\n")
		}
		text := summary
		for _, it := range items {
			text += "\n- " + it
		}
		if text == "" {
			return // nothing to parse: no summary, no item
		}
		gotSummary, gotItems := parseFeedback(text)
		if diff := cmp.Diff([]any{summary, items}, []any{gotSummary, gotItems}); diff != "" {
			t.Errorf("parseFeedback(%q) (-want +got):\n%s", text, diff)
		}
	})
}

// TestFeedbackPriority: the priority word follows the most severe gap, with
// the library's former thresholds (0.95, 0.7, 0.4).
func TestFeedbackPriority(t *testing.T) {
	sev := func(s ...float64) []gap.Gap {
		var gs []gap.Gap
		for _, x := range s {
			gs = append(gs, gap.Gap{Severity: x})
		}
		return gs
	}
	tests := []struct {
		gaps []gap.Gap
		want string
	}{
		{nil, ""},
		{sev(0.95), "critical"},
		{sev(0.3, 0.96), "critical"},
		{sev(0.9), "high"}, // a failing test
		{sev(0.7), "high"},
		{sev(0.69, 0.4), "medium"},
		{sev(0.39), "low"},
	}
	for _, tt := range tests {
		if got := feedbackPriority(tt.gaps); got != tt.want {
			t.Errorf("feedbackPriority(%v) = %q, want %q", tt.gaps, got, tt.want)
		}
	}
}

// TestGapItems: the items of the report's next steps when no feedback text
// covers the open gaps: most severe first, a failing test named, each once,
// within the limit.
func TestGapItems(t *testing.T) {
	gaps := []gap.Gap{
		{Kind: gap.ReviewRejected, Severity: 0.7, Detail: "claims.go: not gofmt-formatted"},
		{Kind: gap.TestFailure, Severity: 0.9, Target: "TestA", Detail: "Expected: 1, Received: 2\nmore"},
		{Kind: gap.TestFailure, Severity: 0.9, Target: "TestB", Detail: "TestB: boom"},
		{Kind: gap.TestFailure, Severity: 0.9, Target: "TestA", Detail: "Expected: 1, Received: 2"},
		{Kind: gap.TestFailure, Severity: 0.5, Target: "TestC"},
	}
	want := []string{"TestA: Expected: 1, Received: 2", "TestB: boom", "claims.go: not gofmt-formatted", "TestC"}
	if diff := cmp.Diff(want, gapItems(gaps, 500)); diff != "" {
		t.Errorf("gapItems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[:2], gapItems(gaps, 3+len(want[0])+3+len(want[1])+5)); diff != "" {
		t.Errorf("gapItems bounded (-want +got):\n%s", diff)
	}
}
