package view

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/iterate"
)

// costWorker spends, every task, tokens and a cost that no three-decimal
// rounding keeps; it never converges.
type costWorker struct{}

func (costWorker) Assess(context.Context, int) (gap.Assessment, error) {
	return gap.Assessment{Missing: []string{"more"}}, nil
}

func (costWorker) Work(_ context.Context, n int, t iterate.Task) (iterate.Outcome[int], error) {
	return iterate.Outcome[int]{Usage: budget.Usage{Tokens: int64(37 + 11*t.Iteration), Cost: 0.0001234567 * float64(t.Iteration+1), Calls: 1}}, nil
}

func (costWorker) Integrate(_ context.Context, n int, _ []iterate.Outcome[int]) (int, error) {
	return n + 1, nil
}

var usageCells = regexp.MustCompile(`<tr data-session="([^"]+)">(?s:.*?)<td class="n tokens"(?: title="([^"]*)")?>([^<]*)</td><td class="n cost"[^>]*>([^<]*)</td>`)

// listUsage returns the tokens and cost cells of the list page's rows, by
// session, and the titles of the rows without usage.
func listUsage(t *testing.T, h *Handler, path string) (map[string][2]string, map[string]string) {
	t.Helper()
	_, body := get(t, h, path)
	cells, why := map[string][2]string{}, map[string]string{}
	for _, m := range usageCells.FindAllStringSubmatch(body, -1) {
		cells[m[1]] = [2]string{m[3], m[4]}
		if m[2] != "" {
			why[m[1]] = m[2]
		}
	}
	return cells, why
}

// TestListUsage guards issue 31, item 12: the list shows each session's
// tokens and cost, and they are exactly the library's figures,
// iterate.Inspect's Usage of the session's newest checkpoint (the cost to
// the float64, not rounded). A session without an engine record shows a
// dash that says why. Mutations caught: the columns removed (no cells),
// the cost formatted as the charts' numbers (three decimals: 0.000 for
// 0.0003703701), the tokens taken from the checkpoint's iteration or
// another field, an envelope-only session shown as 0.
func TestListUsage(t *testing.T) {
	ctx := context.Background()
	m := new(checkpoint.Memory)
	for i, its := range []int{1, 3, 6} {
		name := fmt.Sprintf("cost%d", i)
		if res, err := iterate.New(costWorker{}, iterate.WithCheckpointer(m), iterate.WithSession(name),
			iterate.WithMaxIterations(its)).Run(ctx, 0); res == nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := m.Save(ctx, &checkpoint.Checkpoint{Session: "bare", Status: "escalated"}); err != nil {
		t.Fatal(err)
	}
	cells, why := listUsage(t, newHandler(t, m), "/")
	if len(cells) != 4 {
		t.Fatalf("usage cells of %d rows, want 4: %v", len(cells), cells)
	}
	for i := range 3 {
		name := fmt.Sprintf("cost%d", i)
		c, err := m.Load(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := iterate.Inspect(c)
		if err != nil {
			t.Fatal(err)
		}
		got := cells[name]
		if got[0] != strconv.FormatInt(rep.Usage.Tokens, 10) {
			t.Errorf("%s: tokens %q, the library says %d", name, got[0], rep.Usage.Tokens)
		}
		cost, err := strconv.ParseFloat(got[1], 64)
		if err != nil || cost != rep.Usage.Cost {
			t.Errorf("%s: cost %q, the library says %v", name, got[1], rep.Usage.Cost)
		}
		if rep.Usage.Cost == 0 || rep.Usage.Tokens == 0 {
			t.Errorf("%s: the library's usage is zero (the test's premise)", name)
		}
	}
	if got := cells["bare"]; got != [2]string{"—", "—"} || why["bare"] == "" {
		t.Errorf("bare (no engine record): cells %q, title %q; want dashes that say why", got, why["bare"])
	}
}

// loadCounting is a Memory counting the sessions it loads.
type loadCounting struct {
	*checkpoint.Memory
	loaded []string
	loads  int // of Load
}

func (s *loadCounting) Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	s.loaded = append(s.loaded, session)
	s.loads++
	return s.Memory.Load(ctx, session)
}

func (s *loadCounting) LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error) {
	s.loaded = append(s.loaded, session)
	return s.Memory.LoadGeneration(ctx, session, gen)
}

// TestListUsageBounded guards issue 31, item 12: the list's usage is read
// for the page's rows only, one load each, never for every session of the
// store, and through LoadGeneration, the row's generation, where the
// store has it (a checkpoint.Dir's Load lists the whole directory).
// Mutations caught: usage loaded for every listed session (a loop over
// Sessions), for the sessions before the page, twice a row, through Load.
func TestListUsageBounded(t *testing.T) {
	s := &loadCounting{Memory: manySessions(t, 450)}
	h := newHandler(t, s)
	for _, path := range []string{"/", "/?after=s0300", "/?status=escalated&after=s0100"} {
		s.loaded, s.loads = nil, 0
		_, body := get(t, h, path)
		rows := map[string]bool{}
		for _, m := range rowName.FindAllStringSubmatch(body, -1) {
			rows[m[1]] = true
		}
		if len(s.loaded) != len(rows) || len(rows) != pageRows {
			t.Errorf("%s: %d sessions loaded for %d rows, want one a row of %d", path, len(s.loaded), len(rows), pageRows)
		}
		if s.loads > 0 {
			t.Errorf("%s: %d sessions loaded through Load, not LoadGeneration", path, s.loads)
		}
		for _, name := range s.loaded {
			if !rows[name] {
				t.Errorf("%s: loaded %s, not on the page", path, name)
			}
		}
	}
}

// TestListUsageDir: over a checkpoint.Dir, directly and through ReadOnly,
// the list's figures are the library's for the generation the row shows,
// and reading them changes nothing: of a session whose newest generation
// is damaged, the row shows the newest that reads, and the damaged file
// stays where it is (Dir.Load would quarantine it). Mutation caught: the
// usage loaded through the store's Load (the damaged file quarantined by
// a GET of the list).
func TestListUsageDir(t *testing.T) {
	ctx := context.Background()
	d, newest := damageNewest(t, func(b []byte) []byte { return b[:len(b)/2] })
	shown, err := d.LoadGeneration(ctx, "s", newest-1)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := iterate.Inspect(shown)
	if err != nil {
		t.Fatal(err)
	}
	want := [2]string{strconv.FormatInt(rep.Usage.Tokens, 10), strconv.FormatFloat(rep.Usage.Cost, 'f', -1, 64)}
	damaged := filepath.Join(d.Path(), fmt.Sprintf("s.%020d.ckpt", newest))
	for name, store := range map[string]Store{"Dir": d, "ReadOnly": ReadOnly(d)} {
		h, err := New(store)
		if err != nil {
			t.Fatal(err)
		}
		if cells, why := listUsage(t, h, "/"); cells["s"] != want {
			t.Errorf("%s: cells %q (%q), the library says %q", name, cells["s"], why["s"], want)
		}
		if _, err := os.Stat(damaged); err != nil {
			t.Fatalf("%s: the list moved the damaged generation: %v", name, err)
		}
	}
}
