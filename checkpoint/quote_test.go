package checkpoint_test

import (
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
)

// TestQuoteSession: an error quotes at most 40 bytes of a session name, cut
// back to a rune boundary by at most 3 bytes, with the name's length.
func TestQuoteSession(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct{ name, session, quoted string }{
		{"40_bytes_whole", a(40), `"` + a(40) + `"`},
		{"41_bytes_cut", a(41), `"` + a(40) + `"… (41 bytes)`},
		{"rune_across_the_cut", a(39) + "é" + a(3), `"` + a(39) + `"… (44 bytes)`},
		{"rune_ending_at_the_cut", a(38) + "é" + a(3), `"` + a(38) + `é"… (43 bytes)`},
		// Not UTF-8: the cut goes back 4 bytes at most, then cuts anyway.
		{"continuation_bytes", a(35) + strings.Repeat("\x80", 10), `"` + a(35) + `\x80"… (45 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&checkpoint.SessionError{Session: tc.session, Reason: "r"}).Error()
			if want := "checkpoint: invalid session name " + tc.quoted + ": r"; got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}
