package main

import (
	"io"
	"os"
	"strings"

	"github.com/refine-go/refine/examples/internal/term"
)

// wantEmoji decides the --emoji setting for w: never when NO_COLOR is set
// (https://no-color.org), else always, never, or (auto) only when w is a
// terminal.
func wantEmoji(setting string, w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	switch setting {
	case "always":
		return true
	case "never":
		return false
	}
	return term.Is(w)
}

// plainText replaces the emoji of the displays and the report with plain
// text (or nothing, where the words say it already).
var plainText = strings.NewReplacer(
	"⚠️  ", "WARNING: ",
	"⏸️  ", "",
	"↩️  ", "",
	"🔎 ", "",
	"🔄 ", "",
	"💾 ", "",
	"✨ ", "",
	"📊 ", "",
	"📋 ", "",
	" ⏳", "",
	"✅ ", "",
	"❌ ", "",
	"✅", "met",
	"❌", "NOT MET",
)

// plainWriter writes through plainText. Every display and report line is
// written whole, so no emoji is split between two writes.
type plainWriter struct{ w io.Writer }

// Write writes p without its emoji; it reports len(p) on success.
func (p plainWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, plainText.Replace(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// plainUnless returns w when emoji are wanted, else w without emoji.
func plainUnless(w io.Writer, emoji bool) io.Writer {
	if emoji {
		return w
	}
	return plainWriter{w}
}
