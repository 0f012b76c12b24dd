package term_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/refine-go/refine/examples/internal/term"
)

func TestIs(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var nilFile *os.File
	for name, v := range map[string]any{"buffer": &bytes.Buffer{}, "null device": null, "regular file": file, "nil file": nilFile, "nil": nil} {
		if term.Is(v) {
			t.Errorf("%s is not a terminal", name)
		}
	}
}
