package budget_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/refine-go/refine/budget"
)

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{"empty", "", 0},
		{"one_byte", "a", 1},
		{"four_bytes", "abcd", 1},
		{"five_bytes_round_up", "abcde", 2},
		{"bytes_win", "abcdefghijklmnopqrstuvwxyz", 7},
		{"words_win", "a b c d e", 5},
		{"only_spaces", "     ", 2},
		{"leading_trailing_space", "  hi  there  ", 4},
		{"tabs_and_newlines", "a\tb\nc\rd\ve\ff", 6},
		{"unicode_space_separates", "a\u00a0b\u2003c", 3},
		{"multibyte_counts_bytes", "日本語", 3}, // 9 bytes
		{"invalid_utf8_is_a_word", "\xff \xfe", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, budget.EstimateTokens(tt.text)); diff != "" {
				t.Errorf("EstimateTokens(%q) mismatch (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func FuzzEstimateTokens(f *testing.F) {
	for _, s := range []string{"", "a b", "hello, world", "\u2028x\u00a0y", "\xffabc  d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := max((len(s)+3)/4, len(strings.Fields(s)))
		if got := budget.EstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", s, got, want)
		}
	})
}
