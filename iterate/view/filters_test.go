package view

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// rowsOf returns the names of the list page's rows, in order, and the page.
func rowsOf(t *testing.T, h *Handler, path string) ([]string, string) {
	t.Helper()
	_, body := get(t, h, path)
	var names []string
	for _, m := range rowName.FindAllStringSubmatch(body, -1) {
		names = append(names, m[1])
	}
	return names, body
}

// TestListFilters guards issue 31, item 12: the list filters by the host's
// kind and by age (the time since a session's newest save), with status
// and text; a bad age is said and ignored; the next page keeps every
// filter. Mutations caught: the kind filter or the age filter not applied,
// the next link dropping a filter, a bad age failing the page or
// filtering everything out.
func TestListFilters(t *testing.T) {
	ctx := context.Background()
	m := new(checkpoint.Memory)
	now := time.Now()
	for i, s := range []struct {
		name, status string
		age          time.Duration
	}{{"a-old", "escalated", 72 * time.Hour}, {"b-new", "escalated", 10 * time.Minute}, {"c-new", "converged", 5 * time.Minute}, {"d-mid", "converged", 5 * time.Hour}} {
		if err := m.Save(ctx, &checkpoint.Checkpoint{Session: s.name, Status: s.status, Iteration: i, Time: now.Add(-s.age)}); err != nil {
			t.Fatal(err)
		}
	}
	kinds := map[string]Extra{"a-old": {Kind: "fix"}, "b-new": {Kind: "plan"}, "c-new": {Kind: "fix"}, "d-mid": {Kind: "research"}}
	h := newHandler(t, m, Extras(func(context.Context) (map[string]Extra, error) { return kinds, nil }))
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"a-old", "b-new", "c-new", "d-mid"}},
		{"kind=fix", []string{"a-old", "c-new"}},
		{"age=1h", []string{"b-new", "c-new"}},
		{"age=1d", []string{"b-new", "c-new", "d-mid"}},
		{"age=1h&kind=fix", []string{"c-new"}},
		{"age=7d&status=escalated", []string{"a-old", "b-new"}},
		{"age=soon", []string{"a-old", "b-new", "c-new", "d-mid"}},
	} {
		got, body := rowsOf(t, h, "/?"+c.query)
		if !slices.Equal(got, c.want) {
			t.Errorf("?%s: rows %v, want %v", c.query, got, c.want)
		}
		if strings.Contains(c.query, "soon") && !strings.Contains(body, `age &#34;soon&#34;: not an age`) {
			t.Errorf("?%s: the bad age is not said", c.query)
		}
	}
	// The next link keeps the filters.
	p := listPage{Status: "escalated", Query: "x", Kind: "fix", Age: "7d", Sort: "cost"}
	v, err := url.ParseQuery(p.query("b"))
	if err != nil || v.Get("status") != "escalated" || v.Get("q") != "x" || v.Get("kind") != "fix" || v.Get("age") != "7d" ||
		v.Get("sort") != "cost" || v.Get("after") != "b" {
		t.Errorf("the next page's query %q drops a filter", p.query("b"))
	}
}

// TestListSorted guards issue 31, item 12: the page's rows sort by a
// column (here tokens and cost, the most first; age, the newest first),
// the page's sessions staying those of its names (pages follow names).
// Mutations caught: sorting ignored, sorted the wrong way.
func TestListSorted(t *testing.T) {
	ctx := context.Background()
	m := new(checkpoint.Memory)
	for name, its := range map[string]int{"a": 2, "b": 5, "c": 1, "d": 3} {
		if res, err := iterate.New(costWorker{}, iterate.WithCheckpointer(m), iterate.WithSession(name),
			iterate.WithMaxIterations(its)).Run(ctx, 0); res == nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	h := newHandler(t, m)
	for query, want := range map[string][]string{
		"":               {"a", "b", "c", "d"},
		"sort=tokens":    {"b", "d", "a", "c"},
		"sort=cost":      {"b", "d", "a", "c"},
		"sort=iteration": {"b", "d", "a", "c"},
		"sort=unknown":   {"a", "b", "c", "d"},
	} {
		if got, _ := rowsOf(t, h, "/?"+query); !slices.Equal(got, want) {
			t.Errorf("?%s: rows %v, want %v", query, got, want)
		}
	}
	// Age: the newest saved first.
	a := new(checkpoint.Memory)
	now := time.Now()
	for name, age := range map[string]time.Duration{"x": time.Hour, "y": time.Minute, "z": 2 * time.Hour} {
		if err := a.Save(ctx, &checkpoint.Checkpoint{Session: name, Status: "converged", Time: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := rowsOf(t, newHandler(t, a), "/?sort=age"); !slices.Equal(got, []string{"y", "x", "z"}) {
		t.Errorf("sort=age: rows %v, want [y x z]", got)
	}
}

// TestListFilterBounded guards issue 31, item 12: a filter few sessions
// pass reads at most maxScan sessions of the listing for a page, which then
// ends partial, says so, and links on from where it stopped; following the
// links finds the match. Mutation caught: a filtered page reading the
// listing to its end (every session of the store) to fill its page.
func TestListFilterBounded(t *testing.T) {
	ctx := context.Background()
	m := new(checkpoint.Memory)
	n := maxScan + maxScan/2
	for i := range n {
		st := "escalated"
		if i == maxScan+maxScan/4 {
			st = "converged"
		}
		if err := m.Save(ctx, &checkpoint.Checkpoint{Session: fmt.Sprintf("s%05d", i), Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	s := &countingStore{Memory: m, t: t}
	h := newHandler(t, s)
	got, body := rowsOf(t, h, "/?status=converged")
	if len(got) != 0 || !strings.Contains(body, `id="searched"`) {
		t.Errorf("first page: rows %v, searched note %v; want none, and the note", got, strings.Contains(body, `id="searched"`))
	}
	if s.pulled > maxScan+1 {
		t.Errorf("the first page read %d sessions, want at most %d", s.pulled, maxScan+1)
	}
	next := nextLink.FindStringSubmatch(body)
	if next == nil {
		t.Fatal("no next link on a partial page")
	}
	want := fmt.Sprintf("s%05d", maxScan+maxScan/4)
	if got, _ := rowsOf(t, h, "/?"+strings.ReplaceAll(next[1], "&amp;", "&")); !slices.Equal(got, []string{want}) {
		t.Errorf("the next page: rows %v, want [%s]", got, want)
	}
}
