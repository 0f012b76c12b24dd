package study

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// TestPinSharedMethodUses (issue 32, item 7): the uses the CitationAgent
// cites for a method are its own: when other types of the package declare
// a method of the same name (ServeHTTP, cancel), a call by that name is
// one of its uses only on the receiver of a method of its type
// (tw.writeHeaderLocked in timeoutWriter's methods), so an answer does not
// cite (*deny).ServeHTTP for timeoutHandler.ServeHTTP. A method no other
// type declares, and a function, keep every call by name. Catches the
// uses of a shared name all cited (sharedMethod answering false: Pool.Close
// cites pool/conn.go:10 and :16, Conn's, and pool/pool.go:22).
func TestPinSharedMethodUses(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"pool/pool.go": `package pool

// Pool holds connections.
type Pool struct{ free []*Conn }

// Close closes the pool and its connections.
func (p *Pool) Close() {
	for _, c := range p.free {
		c.Close()
	}
	p.drain()
}

// drain empties the free list.
func (p *Pool) drain() { p.free = nil }

func (p *Pool) Reset() {
	p.Close()
	p.drain()
}

func shutdown(p *Pool) { p.Close(); helper() }

func helper() {}
`,
		"pool/conn.go": `package pool

// Conn is a connection.
type Conn struct{ open bool }

// Close closes the connection.
func (c *Conn) Close() { c.open = false }

func use(c *Conn) {
	c.Close()
	helper()
}

func closeAll(cs []*Conn) {
	for _, c := range cs {
		c.Close()
	}
}
`,
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := buildIndex(context.Background(), root, nil, []string{"close"})
	if err != nil {
		t.Fatal(err)
	}
	w := &researcher{ix: ix, lines: &lineCounter{ix: ix}, filesPerTask: 20}
	tests := []struct {
		key, file string
		line      int
		want      []string
	}{
		// Pool.Close: Conn declares Close too; p.Close() in Reset (a
		// method of Pool, on its receiver) is its use; c.Close() in use
		// and closeAll (Conn's) and p.Close() in the function shutdown
		// are not attributed.
		{"pool.Pool.Close", "pool/pool.go", 7, []string{"pool/pool.go:7", "pool/pool.go:18"}},
		// drain: no other type declares it: every call.
		{"pool.Pool.drain", "pool/pool.go", 15, []string{"pool/pool.go:15", "pool/pool.go:11", "pool/pool.go:19"}},
		// helper, a function: every call.
		{"pool.helper", "pool/pool.go", 24, []string{"pool/pool.go:24", "pool/conn.go:11", "pool/pool.go:22"}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			n := Notes{Root: root, Findings: []Finding{{ID: "F001", Key: tt.key, Kind: KindDefinition, File: tt.file, Line: tt.line, End: tt.line}}}
			part, err := w.pin(context.Background(), &n, iterate.Task{Gaps: []gap.Gap{{Kind: gap.Confidence, Target: "F001"}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(part.Findings) != 1 {
				t.Fatalf("pinned %d findings, want 1", len(part.Findings))
			}
			got := part.Findings[0].Citations
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tt.want))) {
				t.Errorf("citations %v, want %v", got, tt.want)
			}
		})
	}
}
