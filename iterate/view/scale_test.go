package view

import (
	"context"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
)

// countingStore counts the sessions its listing yields, and fails the test
// when listed where forbidden.
type countingStore struct {
	*checkpoint.Memory
	t       *testing.T
	pulled  int
	noLists bool
}

func (s *countingStore) Sessions(ctx context.Context) iter.Seq2[*checkpoint.Checkpoint, error] {
	if s.noLists {
		s.t.Error("every session listed")
	}
	return func(yield func(*checkpoint.Checkpoint, error) bool) {
		for c, err := range s.Memory.Sessions(ctx) {
			s.pulled++
			if !yield(c, err) {
				return
			}
		}
	}
}

// manySessions saves n sessions (envelopes only) named s0000… in a Memory,
// each with a long question.
func manySessions(t *testing.T, n int) *checkpoint.Memory {
	t.Helper()
	m := new(checkpoint.Memory)
	long := strings.Repeat("why? ", 2000)
	for i := range n {
		if err := m.Save(context.Background(), &checkpoint.Checkpoint{Session: fmt.Sprintf("s%04d", i), Status: "escalated",
			Question: long, Reason: long}); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

var (
	rowName  = regexp.MustCompile(`<tr data-session="([^"]+)"`)
	nextLink = regexp.MustCompile(`<a id="next" href="\?([^"]+)"`)
)

// TestListPaged: the list shows pageRows sessions a page, each page
// bounded in bytes (long questions and reasons are cut), reads the store's
// listing only as far as the page needs, and its next links walk every
// session once. Mutations caught: every session rendered (no pages), the
// whole listing read for the first page, rows' texts not cut.
func TestListPaged(t *testing.T) {
	const n = 2*pageRows + 50
	s := &countingStore{Memory: manySessions(t, n), t: t}
	h := newHandler(t, s)
	seen := map[string]bool{}
	path := "/"
	for pages := 0; ; pages++ {
		s.pulled = 0
		_, body := get(t, h, path)
		rows := rowName.FindAllStringSubmatch(body, -1)
		if len(rows) > pageRows {
			t.Fatalf("%s: %d rows", path, len(rows))
		}
		if len(body) > 256<<10 {
			t.Errorf("%s: %d bytes", path, len(body))
		}
		if pages == 0 && s.pulled > pageRows+1 {
			t.Errorf("the first page read %d sessions of the listing, want at most %d", s.pulled, pageRows+1)
		}
		for _, r := range rows {
			if seen[r[1]] {
				t.Errorf("%s listed twice", r[1])
			}
			seen[r[1]] = true
		}
		m := nextLink.FindStringSubmatch(body)
		if m == nil {
			break
		}
		path = "/?" + strings.ReplaceAll(m[1], "&amp;", "&")
		if pages > n/pageRows+1 {
			t.Fatal("the next links do not end")
		}
	}
	if len(seen) != n {
		t.Errorf("the pages list %d sessions, want %d", len(seen), n)
	}
	// A filter reads on until its page is full, not further.
	s.pulled = 0
	_, body := get(t, h, "/?q=s000")
	if rows := rowName.FindAllStringSubmatch(body, -1); len(rows) != 10 || !strings.Contains(body, "10 of ") {
		t.Errorf("text filter: %d rows", len(rows))
	}
}

// TestSessionPageListsNoSessions: a session's page does not list the
// store's sessions (to find forks, at every load): its forks are on a page
// of their own. Mutation caught: the page scanning every session.
func TestSessionPageListsNoSessions(t *testing.T) {
	s := &countingStore{Memory: testStore(t), t: t, noLists: true}
	h := newHandler(t, s)
	for _, p := range []string{"/session/done", "/session/asked", "/session/done/live"} {
		get(t, h, p)
	}
}

// pagingStore is a countingStore that lists from a name on (PageLister).
type pagingStore struct {
	*countingStore
	afters []string
}

func (s *pagingStore) SessionsAfter(ctx context.Context, after string) iter.Seq2[*checkpoint.Checkpoint, error] {
	s.afters = append(s.afters, after)
	return func(yield func(*checkpoint.Checkpoint, error) bool) {
		for c, err := range s.Memory.Sessions(ctx) {
			if c != nil && c.Session <= after {
				continue
			}
			s.pulled++
			if !yield(c, err) {
				return
			}
		}
	}
}

// TestListPagedFromStore guards issue 31, item 10: a page of the list
// after a name is read from the store from that name on (PageLister, as
// checkpoint.Dir and pgcheckpoint.Store list), also through ReadOnly,
// never by listing every session and skipping those before. Mutations
// caught: the list reading Sessions (noLists), ReadOnly hiding the
// store's SessionsAfter, the page's after not passed on.
func TestListPagedFromStore(t *testing.T) {
	s := &pagingStore{countingStore: &countingStore{Memory: manySessions(t, 450), t: t, noLists: true}}
	h, err := New(ReadOnly(s))
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, h, "/?after=s0300")
	names := rowName.FindAllStringSubmatch(body, -1)
	if len(names) != pageRows || names[0][1] != "s0301" {
		t.Fatalf("page after s0300: %d rows from %v", len(names), names[:min(1, len(names))])
	}
	if len(s.afters) != 1 || s.afters[0] != "s0300" {
		t.Errorf("SessionsAfter called with %q, want [s0300]", s.afters)
	}
	if s.pulled > pageRows+1 {
		t.Errorf("the page pulled %d sessions from the store, want at most %d", s.pulled, pageRows+1)
	}
}
