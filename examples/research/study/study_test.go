package study

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// scenario returns the Args of a fixture scenario of ../testdata.
func scenario(t *testing.T, name string) Args {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name, "questions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return Args{Root: filepath.Join("..", "testdata", name, "src"), Questions: string(b), Skip: []string{"testdata", "vendor"}}
}

// TestNew: the loop New builds from its arguments, and its identity.
func TestNew(t *testing.T) {
	ctx := context.Background()
	a := scenario(t, "2_coverage")
	l, err := New(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(a.Root)
	if l.Initial.Root != root || l.Initial.Question == "" || len(l.Initial.Questions) != 2 || len(l.Initial.Estimate) == 0 || l.Initial.TotalFiles == 0 {
		t.Errorf("initial notes = %+v", l.Initial)
	}
	if !strings.HasPrefix(l.Session, "research-") || len(l.Session) != len("research-")+12 {
		t.Errorf("session = %q, want research-<12 hex digits>", l.Session)
	}
	if l.MaxIterations != iterate.DefaultMaxIterations || l.Worker.(*researcher).filesPerTask != DefaultFilesPerTask {
		t.Errorf("defaults: max iterations %d, files per task %d", l.MaxIterations, l.Worker.(*researcher).filesPerTask)
	}

	// The arguments travel as JSON: decoded, they build the same session.
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var decoded Args
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	again, err := New(ctx, decoded)
	if err != nil {
		t.Fatal(err)
	}
	if again.Session != l.Session {
		t.Errorf("session from the decoded arguments = %q, want %q", again.Session, l.Session)
	}
	if diff := cmp.Diff(l.Initial, again.Initial); diff != "" {
		t.Errorf("initial notes from the decoded arguments (-first +again):\n%s", diff)
	}

	// Other questions or skipped directories are another session.
	other := a
	other.Skip = []string{"vendor"}
	if o, err := New(ctx, other); err != nil || o.Session == l.Session {
		t.Errorf("other skip: session %v, err %v; want another session than %s", o, err, l.Session)
	}
}

// TestNewSettings: a loop of other settings (files per task) cannot resume
// a session of the first ones: they are in the fingerprint.
func TestNewSettings(t *testing.T) {
	ctx := context.Background()
	a := scenario(t, "1_single")
	l, err := New(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	store := checkpoint.NewDir(t.TempDir())
	opts := append(l.Options, iterate.WithCheckpointer(store), iterate.WithSession(l.Session))
	if _, err := iterate.New(l.Worker, opts...).Run(ctx, l.Initial); err != nil {
		t.Fatal(err)
	}
	a.FilesPerTask = 3
	changed, err := New(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	opts = append(changed.Options, iterate.WithCheckpointer(store), iterate.WithSession(l.Session))
	if _, err := iterate.New(changed.Worker, opts...).Resume(ctx); !errors.Is(err, iterate.ErrSettingsChanged) {
		t.Errorf("resume with other files per task: %v, want ErrSettingsChanged", err)
	}
}

func TestNewErrors(t *testing.T) {
	ctx := context.Background()
	good := scenario(t, "1_single")
	tests := []struct {
		name string
		edit func(a *Args)
		arg  string // the ArgError's, or "" for another error
		want error
	}{
		{"missing_root", func(a *Args) { a.Root = filepath.Join(t.TempDir(), "none") }, "root", nil},
		{"root_is_a_file", func(a *Args) { a.Root = filepath.Join("..", "testdata", "1_single", "questions.txt") }, "root", nil},
		{"unknown_role", func(a *Args) { a.Agents = map[string]string{"wizard": "x"} }, "agents", nil},
		{"no_command", func(a *Args) { a.Agents = map[string]string{"citation": " "} }, "agents", nil},
		{"negative_files", func(a *Args) { a.FilesPerTask = -1 }, "files_per_task", nil},
		{"negative_iterations", func(a *Args) { a.MaxIterations = -1 }, "max_iterations", nil},
		{"bad_questions", func(a *Args) { a.Questions = "what: is this\n" }, "", ErrQuestionFile},
		{"no_go_files", func(a *Args) { a.Root = t.TempDir() }, "", ErrNoFiles},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := good
			tt.edit(&a)
			_, err := New(ctx, a)
			var argErr *ArgError
			switch {
			case tt.arg != "" && (!errors.As(err, &argErr) || argErr.Arg != tt.arg):
				t.Errorf("New: %v, want an ArgError of %s", err, tt.arg)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("New: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestNewTaskTimeout(t *testing.T) {
	for _, tt := range []struct{ in, want time.Duration }{{0, DefaultTaskTimeout}, {-1, 0}, {time.Second, time.Second}} {
		if got := taskTimeout(tt.in); got != tt.want {
			t.Errorf("taskTimeout(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
