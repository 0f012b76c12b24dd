package checkpoint_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStorageImportsNothingOfTheModule: a store moves bytes. Package
// checkpoint imports nothing of this module, and checkpointtest only
// checkpoint, so that a store (and its conformance suite) never depends on
// the loop's types.
func TestStorageImportsNothingOfTheModule(t *testing.T) {
	const module = "github.com/refine-go/refine/"
	for dir, allowed := range map[string]string{
		".":              "",
		"checkpointtest": module + "checkpoint",
	} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, module) && path != allowed {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}
