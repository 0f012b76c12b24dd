package main

import (
	"strings"
	"testing"
)

// TestColor: the console colours its own WARNING and ERROR lines only on a
// terminal without NO_COLOR (https://no-color.org), never elsewhere.
func TestColor(t *testing.T) {
	tests := []struct {
		name string
		tty  bool
		env  map[string]string
		want bool
	}{
		{"terminal", true, nil, true},
		{"not_a_terminal", false, nil, false},
		{"no_color", true, map[string]string{"NO_COLOR": "1"}, false},
		{"no_color_empty_is_unset", true, map[string]string{"NO_COLOR": ""}, true},
		{"dumb_terminal", true, map[string]string{"TERM": "dumb"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			color := useColor(tt.tty, func(k string) string { return tt.env[k] })
			if color != tt.want {
				t.Fatalf("useColor = %t, want %t", color, tt.want)
			}
			var b strings.Builder
			c := &console{w: &b, tty: tt.tty, color: color}
			c.warn("careful")
			c.error("broken")
			if got := strings.Contains(b.String(), "\x1b["); got != tt.want {
				t.Errorf("escape sequences written: %t, want %t:\n%q", got, tt.want, b.String())
			}
			if !strings.Contains(b.String(), "WARNING: careful") || !strings.Contains(b.String(), "ERROR: broken") {
				t.Errorf("lines lost:\n%q", b.String())
			}
		})
	}
}
