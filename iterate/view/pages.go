package view

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// row is one session of the listing.
type row struct {
	Name, Link, Status, Reason, Question string
	Extra
	Iteration  int
	Generation uint64
	Saved      string
	Age        string
	Origin     *checkpoint.Origin
	OriginLink string
	Err        string
	Skipped    []uint64 // damaged newer generations
	Holding    string   // of a running session: whether a process holds it
	// Tokens and Cost are the session's usage, budget.Usage as
	// iterate.Inspect reads it from its newest checkpoint's engine
	// record; UsageErr says why there is none (no engine record, or it
	// does not load).
	Tokens, Cost, UsageErr string
	// Extended is the extension recorded for the session's stop at its
	// budget (as its page tells it: the host's, or the Extender's
	// ExtensionReader's), ExtendedTo its limits as text ("" when not
	// told).
	Extended   *ExtensionRecord
	ExtendedTo string
	stored     bool // the row is of a checkpoint, not only of the host's extras
	saved      time.Time
	tokens     int64
	cost       float64
}

// listPage is the listing's data.
type listPage struct {
	Title, Status, Query string
	// Kind, Age and Sort are the query's other filters and order: the
	// host's kind of session, the most time since a session's newest save
	// ("90m", "2d"), and the column the page's rows are sorted by.
	Kind, Age, Sort string
	Sorts           []string
	// Searched is set when the page ended before it was full, a filter
	// having read maxScan sessions of the store; SearchedTo, the name the
	// listing was read up to.
	Searched   bool
	SearchedTo string
	MaxScan    int
	Ages       []string // offered
	Statuses   []string
	Rows       []row
	Errors     []string
	// Total is the number of sessions, known when the page is the first
	// and the last (0 otherwise).
	Total  int
	Extras bool // whether the host tells extras
	// After is the query's cursor; Next and First the links to the next
	// page and to the first, when there are.
	After, Next, First string
	// Fingerprint is that of the page's rows (see ListLive); Poll, in
	// milliseconds, how often the page asks /live for it.
	Fingerprint string
	Poll        int64
}

// pageRows is the number of sessions a page of the list shows; maxField
// bounds (in bytes) the reason and question a row shows, so that a page
// is bounded in bytes.
const (
	pageRows = 100
	// maxScan bounds the sessions a filtered page reads from the store's
	// listing: a filter few sessions pass ends its page there, partial,
	// with a link on.
	maxScan  = 10 * pageRows
	maxField = 300
	// maxUsageErr bounds why a row shows no usage (a title).
	maxUsageErr = 160
)

// knownStatuses are the statuses the list's filter offers, beside those
// the page's rows have.
var knownStatuses = []string{"running", "escalated", "interrupted", "converged", "early_exit", "max_iterations",
	"stuck", "plateau", "budget_exhausted", "aborted", "failed", "queued", "cancelled"}

// clip cuts s to at most n bytes, at a rune boundary, marking a cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// list serves a page of the list: the sessions after the query's "after"
// (a session name) in the store's order, that of their names, that pass
// the filters, at most pageRows of them. The store's listing is read until
// the page is full, not further: a page costs what the sessions before it
// and on it cost to list, whatever follows (a store lists its sessions
// lazily, as checkpoint.Dir does, or in one query).
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	p := h.listRows(r)
	p.Fingerprint, p.Poll = fingerprint(&p), h.poll.Milliseconds()
	h.usage(r.Context(), p.Rows)
	sortRows(p.Rows, p.Sort)
	var b [16]byte
	_, _ = rand.Read(b[:])
	h.render(w, listTmpl, p, hex.EncodeToString(b[:]))
}

// sorts are the orders the list offers for a page's rows: by name (the
// store's, "") or by another column, the page's rows only, pages
// following names.
var sorts = []string{"status", "age", "iteration", "tokens", "cost"}

// sortRows sorts the page's rows by the column by names: status
// alphabetically, the newest saved first, the most iterations, tokens or
// cost first; ties, and an unknown column, by name.
func sortRows(rows []row, by string) {
	key := map[string]func(a, b *row) int{
		"status":    func(a, b *row) int { return cmp.Compare(a.Status, b.Status) },
		"age":       func(a, b *row) int { return b.saved.Compare(a.saved) },
		"iteration": func(a, b *row) int { return cmp.Compare(b.Iteration, a.Iteration) },
		"tokens":    func(a, b *row) int { return cmp.Compare(b.tokens, a.tokens) },
		"cost":      func(a, b *row) int { return cmp.Compare(b.cost, a.cost) },
	}[by]
	if key == nil {
		return
	}
	slices.SortStableFunc(rows, func(a, b row) int { return key(&a, &b) })
}

// ages are the age filters the list offers (any other is read too).
var ages = []string{"1h", "24h", "7d", "30d"}

// query is the page's query with after as the cursor.
func (p *listPage) query(after string) string {
	v := url.Values{}
	for k, x := range map[string]string{"status": p.Status, "q": p.Query, "kind": p.Kind, "age": p.Age, "sort": p.Sort, "after": after} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v.Encode()
}

// parseAge reads an age filter: a Go duration ("90m", "36h") or days
// ("2d"), positive.
func parseAge(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		days, err = strconv.Atoi(n)
		if days > 100000 {
			days = 100000
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("age %q: not an age (90m, 36h, 2d): ignored", s)
	}
	return d, nil
}

// ListLive is what the list's /live tells, as JSON, of the page its query
// names (status, q, after): a fingerprint of the page's rows as the list
// would show them (their sessions, statuses, generations, holders,
// answers, errors, and the page's links), without their usage. The list
// page polls it and reloads when it changes.
type ListLive struct {
	Fingerprint string `json:"fingerprint"`
}

// listLive serves the list's /live: the page's rows are listed as the
// list lists them (the sessions on the page and before it, as a page
// costs), but no generation is loaded.
func (h *Handler) listLive(w http.ResponseWriter, r *http.Request) {
	p := h.listRows(r)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(ListLive{Fingerprint: fingerprint(&p)})
}

// fingerprint hashes what the page's rows show but their usage (which
// changes only with a new generation, that it hashes).
func fingerprint(p *listPage) string {
	f := sha256.New()
	for _, rw := range p.Rows {
		fmt.Fprintf(f, "%q %q %d %d %q %q %q %q %q %v %v %v %q %q %v\n", rw.Name, rw.Status, rw.Generation, rw.Iteration,
			rw.Saved, rw.Reason, rw.Question, rw.Holding, rw.Holder, rw.Answered, rw.Skipped, rw.Kind, rw.Err, rw.Extra.Status,
			rw.Extended != nil)
	}
	fmt.Fprintf(f, "%d %q %q %q", p.Total, p.Next, p.First, p.Errors)
	return hex.EncodeToString(f.Sum(nil)[:12])
}

// listRows lists the rows of the page r asks for.
func (h *Handler) listRows(r *http.Request) listPage {
	ctx := r.Context()
	qv := r.URL.Query()
	p := listPage{Title: h.title, Status: qv.Get("status"), Query: qv.Get("q"), After: qv.Get("after"), Extras: h.extras != nil || h.extrasAfter != nil,
		Kind: qv.Get("kind"), Age: qv.Get("age"), Sort: qv.Get("sort"), Sorts: sorts,
		MaxScan: maxScan, Ages: ages}
	if p.Age != "" && !slices.Contains(ages, p.Age) {
		p.Ages = append(slices.Clone(ages), p.Age)
	}
	now := h.now()
	q := strings.ToLower(p.Query)
	var maxAge time.Duration
	if p.Age != "" {
		d, err := parseAge(p.Age)
		if err != nil {
			p.Errors = append(p.Errors, err.Error())
		}
		maxAge = d
	}
	match := func(rw *row) bool {
		if p.Status != "" && rw.Status != p.Status || p.Kind != "" && rw.Kind != p.Kind {
			return false
		}
		if maxAge > 0 && (rw.saved.IsZero() || now.Sub(rw.saved) > maxAge) {
			return false
		}
		return q == "" || strings.Contains(strings.ToLower(rw.Name+"\n"+rw.Reason+"\n"+rw.Question+"\n"+rw.Holder+"\n"+rw.Kind), q)
	}
	// stored makes the row of c, a session of the store (err, why its
	// envelope does not read), with what the host knows of it (extrasOK:
	// it read), and reports whether it passes the filters.
	stored := func(c *checkpoint.Checkpoint, err error, x Extra, extrasOK bool) (row, bool) {
		rw := row{Name: c.Session, Link: "session/" + link(c.Session)[2:], Status: c.Status, Reason: clip(c.Reason, maxField),
			Question: clip(c.Question, maxField), Iteration: c.Iteration, Generation: c.Generation, Extra: x, stored: true}
		if err != nil {
			rw.Err = clip(err.Error(), maxField)
		} else {
			rw.Skipped = c.Skipped
		}
		if !c.Time.IsZero() {
			rw.saved = c.Time
			rw.Saved = c.Time.UTC().Format(time.RFC3339)
			rw.Age = age(now.Sub(c.Time))
		}
		if c.Origin.Session != "" {
			o := c.Origin
			rw.Origin, rw.OriginLink = &o, "session/"+link(o.Session)[2:]
		}
		if !match(&rw) {
			return rw, false
		}
		if c.Status == string(iterate.Running) && err == nil {
			rw.Holding = h.holding(c.Session, rw.Extra, extrasOK)
		}
		if (c.Status == string(iterate.BudgetExhausted) || c.Status == string(iterate.Escalated)) && err == nil {
			// A stop at the budget extended waits to be resumed: the row
			// says so, as the session's page does. (Only a stop at the
			// budget is extended: an escalation that is not a park has no
			// extension recorded.)
			if x, _ := h.extensionOf(ctx, c.Session, c.Generation, rw.Extra); x != nil {
				rw.Extended = x
				if x.To != (budget.Limits{}) {
					rw.ExtendedTo = limitsText(x.To)
				}
			}
		}
		return rw, true
	}
	var complete bool
	var scanned int
	var cursor string
	if h.extrasAfter != nil {
		complete, scanned, cursor = h.mergeRows(ctx, &p, match, stored)
	} else {
		complete, scanned, cursor = h.mapRows(ctx, &p, match, stored)
	}
	slices.SortFunc(p.Rows, func(a, b row) int { return cmp.Compare(a.Name, b.Name) })
	if len(p.Rows) > pageRows {
		p.Rows, complete = p.Rows[:pageRows], false
		cursor = p.Rows[len(p.Rows)-1].Name
	}
	p.SearchedTo = cursor
	if !complete && cursor != "" {
		p.Next = "?" + p.query(cursor)
	}
	if complete && p.After == "" {
		p.Total = scanned
	}
	if p.After != "" {
		p.First = "?" + p.query("")
	}
	seen := map[string]bool{}
	for _, s := range knownStatuses {
		seen[s] = true
	}
	p.Statuses = append(p.Statuses, knownStatuses...)
	for _, rw := range p.Rows {
		if !seen[rw.Status] && rw.Status != "" {
			seen[rw.Status] = true
			p.Statuses = append(p.Statuses, rw.Status)
		}
	}
	return p
}

// generationLoader loads one generation of a session, whole
// (checkpoint.Dir, checkpoint.Memory and pgcheckpoint.Store do).
type generationLoader interface {
	LoadGeneration(ctx context.Context, session string, gen uint64) (*checkpoint.Checkpoint, error)
}

// usage fills the rows' tokens and cost from each session's engine record,
// read by iterate.Inspect: the figures are the library's own Usage. The
// generation loaded is the one the row shows, through the store's
// LoadGeneration when it has one (of a checkpoint.Dir, one file, where
// Load lists the directory), else the newest, through Load (and so when
// the row's generation was pruned meanwhile). Only the page's rows are
// loaded, one load a row, at most pageRows: never every session. A row
// without a checkpoint (a queued session the host tells of) or whose
// envelope did not read is passed over.
func (h *Handler) usage(ctx context.Context, rows []row) {
	gl, byGen := h.store.(generationLoader)
	for i := range rows {
		rw := &rows[i]
		if rw.Err != "" || !rw.stored {
			continue
		}
		var c *checkpoint.Checkpoint
		err := checkpoint.ErrNotFound
		if byGen && rw.Generation > 0 {
			c, err = gl.LoadGeneration(ctx, rw.Name, rw.Generation)
		}
		if errors.Is(err, checkpoint.ErrNotFound) {
			c, err = h.store.Load(ctx, rw.Name)
		}
		if err != nil {
			rw.UsageErr = clip(err.Error(), maxUsageErr)
			continue
		}
		rep, err := iterate.Inspect(c)
		if err != nil {
			rw.UsageErr = clip(err.Error(), maxUsageErr)
			continue
		}
		rw.tokens, rw.cost = rep.Usage.Tokens, rep.Usage.Cost
		rw.Tokens = strconv.FormatInt(rep.Usage.Tokens, 10)
		// The shortest decimal that reads back as the same float64: the
		// library's figure exactly, not rounded.
		rw.Cost = strconv.FormatFloat(rep.Usage.Cost, 'f', -1, 64)
	}
}

// age formats d as a short age ("42s", "5m", "3h", "2d").
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// iterRow is one iteration of a session's timeline.
type iterRow struct {
	Iteration         int
	Action            string
	Failed, Best      bool
	Gaps              int
	Kinds             string
	P1, P2, P3        int
	Tokens            int64
	TokenShare        string // of the token limit, "" without one
	TokenWidth        int    // percent, for the bar
	Cost              string
	Calls             int64
	Duration          string
	Tasks, FailedTask int
	Runs              []taskRow
	Summary           string
	// Verdict is the decision taken on the iteration's state, when it is
	// not "continue"; Unmet, the criteria it found unmet.
	Verdict string
	Unmet   []string
	// Pending is set for an iteration completed but not yet assessed
	// (the history's Pending): it has no gaps nor decision yet.
	Pending bool
}

// taskRow is one task of an iteration.
type taskRow struct {
	Role, Gap, Duration, Err, Output string
	Tokens                           int64
}

// budgetRow is one resource of the budget.
type budgetRow struct {
	Resource, Used, Limit, Share string
	Over                         bool
}

// sessionPage is a session page's data.
type sessionPage struct {
	Title                string
	C                    *checkpoint.Checkpoint
	R                    *iterate.Report
	Final                bool
	Poll                 int64
	Started, Saved, Last string
	Elapsed              string
	OriginLink           string
	Question             string
	Esc                  *iterate.Escalation
	Unmet                []string
	Verdict, Reason      string // the decision's; Reason without a repeated verdict
	Dropped              int
	NotLoaded            bool // older kept generations hold iterations before Dropped
	Iterations           []iterRow
	Budget               []budgetRow
	Charts               []chart
	Settings             []setting
	Generations          []*checkpoint.Checkpoint
	GenerationsErr       string
	Answer               bool
	Token                string
	AnswerLink           string
	// Cancel is set when the page offers to cancel the session, with the
	// form's token and action.
	Cancel                  bool
	CancelToken, CancelLink string
	// Extend is set when the page offers to extend the session's budget,
	// with the form's token and action and the current limits.
	// Fork is set when the page offers to fork the session, with the
	// form's token and action.
	Fork                    bool
	ForkToken, ForkLink     string
	Extend                  bool
	ExtendToken, ExtendLink string
	// Parked is set when the session is parked at its budget's limit
	// (escalated, Escalation.Parked set).
	Parked bool
	// Extension is the extension recorded for the session's stop at its
	// budget, ExtensionTo its limits as text ("" when not told), or
	// ExtensionErr why it does not read.
	Extension                 *ExtensionRecord
	ExtensionTo, ExtensionErr string
	// Extensions are the raises of the session's budget it was resumed
	// under (iterate.Report's Extensions), oldest first.
	Extensions    []extensionRow
	Wall          string
	BestIteration int
	HasBest       bool
	BestBy        string // the keep-best scorer, as the settings name it
	// LiveGeneration is the generation /live tells now: the page reloads
	// when it changes.
	LiveGeneration uint64
	// Holding tells, of a running session, whether a process holds it
	// (held, unheld, or unknown).
	Holding string
	// StoppedBy is set when Verdict is the status the loop stopped with
	// rather than a convergence decision.
	StoppedBy bool
	// Extras is set when the host tells extras.
	Extras bool
	// QA are the session's escalations, answered or not, oldest first.
	QA                    []qa
	TotalTasks, TotalFail int
	Err                   string // why the engine record does not read
	ForksLink             string
	Extra                 Extra
	ExtrasErr             string
	Links                 []Link // the host's (Extra.Links), as the page links them
}

// extraOf returns what the host knows of session: through ExtraOf when
// given, else from Extras' map (the zero Extra without either).
func (h *Handler) extraOf(ctx context.Context, session string) (Extra, error) {
	if h.extraOne == nil {
		m, err := h.extrasOf(ctx)
		return m[session], err
	}
	x, err := h.extraOne(ctx, session)
	if err != nil {
		return Extra{}, fmt.Errorf("reading what the host knows of session %q: %w", session, err)
	}
	return x, nil
}

// answeredAt reports whether answers hold one to the escalation of
// generation gen.
func answeredAt(answers []AnswerRecord, gen uint64) bool {
	for _, a := range answers {
		if a.Generation == gen {
			return true
		}
	}
	return false
}

// hasExtras reports whether the host tells extras (Extras, ExtraOf or
// ExtrasAfter).
func (h *Handler) hasExtras() bool {
	return h.extras != nil || h.extraOne != nil || h.extrasAfter != nil
}

// extrasOf returns the host's extras, nil without them.
func (h *Handler) extrasOf(ctx context.Context) (map[string]Extra, error) {
	if h.extras == nil {
		return nil, nil
	}
	m, err := h.extras(ctx)
	if err != nil {
		return m, fmt.Errorf("reading what the host knows of the sessions: %w", err)
	}
	return m, nil
}

// fork is a session forked from the one shown.
type fork struct {
	Name, Link string
	Generation uint64
}

// maxOlder bounds the older generations a session's page loads.
const maxOlder = 16

// older completes recs, the records of c's history window, with the
// records of earlier iterations that the older kept generations of the
// session still hold (a session's whole history is the union of its kept
// generations' records), when the store loads generations; gens are the
// session's generations as listed. Each generation loaded is the newest
// whose window reaches below the earliest record found so far, so each load
// adds the records of up to a window of iterations; at most maxOlder are
// loaded. A generation that does not load is passed over. more reports
// whether older kept generations that were not loaded may hold earlier
// iterations still.
func (h *Handler) older(ctx context.Context, c *checkpoint.Checkpoint, recs []converge.Record, gens []*checkpoint.Checkpoint) (_ []converge.Record, more bool) {
	gs, ok := h.store.(GenerationStore)
	if !ok {
		return recs, false
	}
	first := recs[0].Iteration
	var earlier []converge.Record
	loads := 0
	// Candidates, newest first: older generations saved after fewer
	// iterations than first + 1 (a generation of iteration i keeps records
	// up to i).
	i := len(gens) - 1
	for first > 0 && i >= 0 {
		g := gens[i]
		if g.Generation >= c.Generation || g.Iteration > first {
			i--
			continue
		}
		if loads == maxOlder {
			return append(earlier, recs...), true
		}
		i--
		loads++
		old, err := gs.LoadGeneration(ctx, c.Session, g.Generation)
		if err != nil {
			continue
		}
		r, err := iterate.Inspect(old)
		if err != nil {
			continue
		}
		var add []converge.Record
		for _, rec := range r.History.Recent {
			if rec.Iteration < first {
				add = append(add, rec)
			}
		}
		if len(add) > 0 {
			earlier = append(add, earlier...)
			first = add[0].Iteration
		}
	}
	return append(earlier, recs...), false
}

// setting is one setting, readable.
type setting struct {
	Name, Value, Detail string
}

func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	// The generations are listed before the newest is loaded, and the page
	// follows the newest listed, as /live tells it: a generation saved
	// meanwhile reloads the page, and one that is damaged does not.
	var gens []*checkpoint.Checkpoint
	var gensErr error
	gener, listsGens := h.store.(Generationer)
	if listsGens {
		gens, gensErr = gener.Generations(ctx, name)
	}
	var c *checkpoint.Checkpoint
	var err error
	if ro, ok := h.store.(readOnly); ok && gensErr == nil {
		c, err = ro.loadListed(ctx, name, gens)
	} else {
		c, err = h.store.Load(ctx, name)
	}
	notStarted := false
	if errors.Is(err, checkpoint.ErrNotFound) {
		// A session the host knows of that has no checkpoint yet (a
		// fleet's queued session) shows what the host tells.
		if x, _ := h.extraOf(ctx, name); x.Status != "" {
			c, err, notStarted = &checkpoint.Checkpoint{Session: name, Status: x.Status}, nil, true
		}
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	// A checkpoint without a readable engine record (saved by another
	// tool, or damaged) still shows its envelope.
	rep, err := iterate.Inspect(c)
	inspectErr := ""
	if err != nil {
		rep, inspectErr = &iterate.Report{}, err.Error()
		if notStarted {
			inspectErr = "not started yet: no checkpoint saved"
		}
	}
	p := sessionPage{Title: h.title, C: c, R: rep, Final: iterate.Status(c.Status).Final(), Poll: h.poll.Milliseconds(),
		Started: stamp(rep.StartedAt), Saved: stamp(c.Time), Last: stamp(rep.LastIterationAt),
		Elapsed: rep.Elapsed.Round(time.Millisecond).String(), Esc: rep.Escalation, Verdict: rep.Decision.Verdict.String(), Reason: rep.Decision.Reason,
		TotalTasks: rep.Totals.Tasks, TotalFail: rep.Totals.FailedTasks, Err: inspectErr}
	if c.Origin.Session != "" {
		p.OriginLink = link(c.Origin.Session)
	}
	p.Question = c.Question
	if p.Question == "" && rep.Escalation != nil {
		p.Question = rep.Escalation.Question
	}
	p.Reason = strings.TrimPrefix(p.Reason, p.Verdict+": ")
	for _, u := range rep.Decision.Unmet() {
		p.Unmet = append(p.Unmet, u.String())
	}
	recs := rep.History.Recent
	if len(recs) > 0 && recs[0].Iteration > 0 && gensErr == nil {
		recs, p.NotLoaded = h.older(ctx, c, recs, gens)
		rep.History.Recent = recs // for the charts; rep is this page's own
	}
	if len(recs) > 0 {
		p.Dropped = recs[0].Iteration
	}
	// The best iteration is the engine's kept best (Result.Best), by the
	// loop's own scorer; a loop without WithKeepBest has none.
	if b := bestOf(c); b != nil {
		p.BestIteration, p.HasBest = b.Iteration, true
		for _, s := range rep.Settings {
			if s[0] == "keep best" {
				p.BestBy = s[1]
			}
		}
	}
	// A checkpoint saved between iterations holds the iteration just
	// completed as the history's Pending, not yet assessed: it is shown,
	// so the timeline ends where /live and the summary say the session is.
	var pending *converge.Record
	if pa := rep.History.Pending; !pa.IsZero() && (len(recs) == 0 || recs[len(recs)-1].Iteration < c.Iteration) {
		pending = &converge.Record{Iteration: c.Iteration, Attempt: pa}
	}
	rows := recs
	if pending != nil {
		rows = append(slices.Clip(recs), *pending)
	}
	for i := range rows {
		rec := &rows[i]
		lim := limitsAt(rep, rec.Iteration)
		ir := iterRow{Iteration: rec.Iteration, Action: rec.Action, Failed: rec.Failed, Gaps: rec.Gaps,
			Kinds: kinds(rec.Kinds), P1: rec.Priorities[0], P2: rec.Priorities[1], P3: rec.Priorities[2],
			Tokens: rec.Tokens, Calls: rec.Calls, Tasks: rec.Tasks, FailedTask: rec.FailedTasks,
			Runs: taskRows(rec.TaskRuns), Summary: rec.Summary, Best: p.HasBest && rec.Iteration == p.BestIteration}
		if pending != nil && i == len(rows)-1 {
			ir.Pending = true
		} else if rec.Verdict != converge.Continue {
			ir.Verdict = rec.Verdict.String()
		}
		for _, u := range rec.Unmet {
			ir.Unmet = append(ir.Unmet, u.String())
		}
		if rec.Cost != 0 {
			ir.Cost = number(rec.Cost)
		}
		if rec.Iteration > 0 {
			ir.Duration = duration(rec.Duration)
		}
		if lim.Tokens > 0 && rec.Tokens > 0 {
			share := float64(rec.Tokens) / float64(lim.Tokens) * 100
			ir.TokenShare = pct(share)
			ir.TokenWidth = int(min(share, 100) + 0.5)
		}
		p.Iterations = append(p.Iterations, ir)
	}
	p.Budget = budgetRows(c, rep)
	p.Charts = charts(h.metrics, rep, pending)
	p.Settings = settings(rep.Settings)
	p.Generations, p.LiveGeneration = gens, c.Generation
	if gensErr != nil {
		p.GenerationsErr = gensErr.Error()
	} else if listsGens && len(gens) > 0 {
		p.LiveGeneration = gens[len(gens)-1].Generation
	}
	// The forks of a session are found by listing every session, which a
	// page does not do at every load: a link lists them (see forks).
	p.ForksLink = link(name) + "/forks"
	extra, extrasErr := h.extraOf(ctx, name)
	if extrasErr != nil {
		p.ExtrasErr = extrasErr.Error()
	}
	p.Extra, p.Extras = extra, h.hasExtras()
	if answeredAt(p.Extra.Answers, c.Generation) {
		// The host was read after the checkpoint shown and may speak of a
		// newer generation (the session answered and resumed meanwhile):
		// an answer recorded for the generation shown answers it.
		p.Extra.Answered = true
	}
	p.Links = pageLinks(p.Extra.Links, "../")
	if c.Status == string(iterate.Running) {
		p.Holding = h.holding(name, p.Extra, h.hasExtras() && extrasErr == nil)
	}
	// A loop that stopped without a decision to stop (an escalation its
	// strategy or a task raised, an interruption, a failure) keeps the
	// convergence check's "continue" in its record: the status is what
	// stopped it.
	if st := iterate.Status(c.Status); st != iterate.Running && st != "" && rep.Decision.Verdict == converge.Continue {
		p.Verdict, p.Reason, p.StoppedBy = c.Status, c.Reason, true
	}
	p.QA = questions(gens, p.Extra.Answers, c)
	for _, x := range rep.Extensions {
		p.Extensions = append(p.Extensions, extensionRow{Iteration: x.Iteration, From: limitsText(x.From), To: limitsText(x.To),
			By: x.By, At: stamp(x.At)})
	}
	// A session stopped at its budget (budget_exhausted, or parked: its
	// question asks for more) shows the extension recorded for that stop,
	// or offers one unless its question is answered already.
	if inspectErr == "" && atBudget(c, rep) {
		p.Parked = c.Status == string(iterate.Escalated)
		x, xerr := h.extensionOf(ctx, name, c.Generation, p.Extra)
		switch {
		case xerr != nil:
			p.ExtensionErr = xerr.Error()
		case x != nil:
			p.Extension, p.ExtensionTo = x, limitsText(x.To)
			if x.To == (budget.Limits{}) {
				p.ExtensionTo = "" // the host does not tell them
			}
			// The stop is not the session's end: the page follows it
			// until it is resumed, as a running session's does.
			p.Final = false
		case h.extender != nil && !(p.Parked && p.Extra.Answered) && !p.Extra.Cancelled:
			p.Extend, p.ExtendToken, p.ExtendLink = true, h.extendToken(name, c.Generation), link(name)+"/extend"
			if rep.Limits.Wall > 0 {
				p.Wall = rep.Limits.Wall.String()
			}
		}
	}
	if h.answerer != nil && c.Status == string(iterate.Escalated) && p.Question != "" && !p.Extra.Answered && p.Extension == nil {
		p.Answer, p.Token, p.AnswerLink = true, h.token(name, c.Generation), link(name)+"/answer"
	}
	if h.forker != nil && !notStarted {
		p.Fork, p.ForkToken, p.ForkLink = true, h.forkToken(name), link(name)+"/fork"
	}
	// A stop at the budget whose extension waits to be resumed is not
	// the session's end: cancelling it stops the resume.
	if h.canceller != nil && !p.Extra.Cancelled && (h.cancellable(c.Status) || p.Extension != nil) {
		p.Cancel, p.CancelToken, p.CancelLink = true, h.cancelToken(name), link(name)+"/cancel"
	}
	nonce := ""
	if !p.Final {
		var b [16]byte
		_, _ = rand.Read(b[:])
		nonce = hex.EncodeToString(b[:])
	}
	h.render(w, sessionTmpl, p, nonce)
}

// limitsAt returns the budget limits the session of rep ran iteration it
// under: those before the first extension made after it (an extension
// after iteration k raises the limits of the iterations after k), else
// the current ones.
func limitsAt(rep *iterate.Report, it int) budget.Limits {
	for _, x := range rep.Extensions {
		if x.Iteration >= it {
			return x.From
		}
	}
	return rep.Limits
}

// extensionRow is one raise of a session's budget in place, as the
// session recorded it (iterate.Extension): after which iteration, the
// limits before and after, by whom and when.
type extensionRow struct {
	Iteration        int
	From, To, By, At string
}

// qa is one escalation of a session and its accepted answer.
type qa struct {
	Generation uint64
	Iteration  int
	Question   string
	Answer     *AnswerRecord
	Open       bool // the newest checkpoint's, not answered yet
}

// questions lists the escalations of a session: those of its kept
// generations (an escalated generation holds its question) and those the
// host's answer records name, each with its accepted answer when the host
// records one; c is the newest checkpoint.
func questions(gens []*checkpoint.Checkpoint, answers []AnswerRecord, c *checkpoint.Checkpoint) []qa {
	byGen := map[uint64]int{}
	var out []qa
	add := func(q qa) {
		if i, ok := byGen[q.Generation]; ok {
			if out[i].Question == "" {
				out[i].Question = q.Question
			}
			if q.Answer != nil {
				out[i].Answer = q.Answer
			}
			return
		}
		byGen[q.Generation] = len(out)
		out = append(out, q)
	}
	for _, g := range gens {
		if g.Status == string(iterate.Escalated) {
			add(qa{Generation: g.Generation, Iteration: g.Iteration, Question: g.Question})
		}
	}
	if c.Status == string(iterate.Escalated) {
		add(qa{Generation: c.Generation, Iteration: c.Iteration, Question: c.Question})
	}
	for i := range answers {
		a := answers[i]
		it := -1 // not told
		if a.Iteration > 0 {
			it = a.Iteration
		}
		add(qa{Generation: a.Generation, Iteration: it, Question: a.Question, Answer: &a})
	}
	for i := range out {
		out[i].Open = out[i].Answer == nil && out[i].Generation == c.Generation && c.Status == string(iterate.Escalated)
	}
	slices.SortFunc(out, func(a, b qa) int { return cmp.Compare(a.Generation, b.Generation) })
	return out
}

// forksPage is the data of a session's forks page.
type forksPage struct {
	Title, Session, Back string
	Forks                []fork
	Errors               []string
}

// forks serves the list of a session's forks: the sessions whose origin
// it is, found by listing every session (the one page that does).
func (h *Handler) forks(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	p := forksPage{Title: h.title, Session: name, Back: "../" + url.PathEscape(name)}
	for o, err := range h.store.Sessions(r.Context()) {
		switch {
		case o == nil && err != nil:
			p.Errors = append(p.Errors, err.Error())
		case o != nil && o.Origin.Session == name:
			p.Forks = append(p.Forks, fork{Name: o.Session, Link: "../" + url.PathEscape(o.Session), Generation: o.Origin.Generation})
		}
	}
	slices.SortFunc(p.Forks, func(a, b fork) int { return cmp.Compare(a.Name, b.Name) })
	h.render(w, forksTmpl, p, "")
}

// taskRows makes an iteration's task runs readable.
func taskRows(runs []converge.TaskRun) []taskRow {
	rows := make([]taskRow, len(runs))
	for i, t := range runs {
		rows[i] = taskRow{Role: t.Role, Gap: string(t.Kind), Err: t.Err, Output: t.Output, Tokens: t.Tokens}
		switch {
		case t.Target == "" || t.Target == string(t.Kind):
		case t.Kind == "":
			rows[i].Gap = t.Target
		default:
			rows[i].Gap += ": " + t.Target
		}
		if t.Duration > 0 {
			rows[i].Duration = duration(t.Duration)
		}
	}
	return rows
}

// duration formats d to the millisecond, or to the microsecond below one
// ("340µs", not "0s").
func duration(d time.Duration) string {
	if d > -time.Millisecond && d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// render writes t with data, under a content security policy allowing only
// the inline script of nonce.
func (h *Handler) render(w http.ResponseWriter, t *template.Template, data any, nonce string) {
	script := "'none'"
	if nonce != "" {
		script = "'nonce-" + nonce + "'"
	}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; script-src "+script)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var b strings.Builder
	if err := t.Execute(&b, struct {
		P     any
		Nonce string
	}{data, nonce}); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte(b.String()))
}

// stamp formats t, or "-" when zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// kinds formats gap counts by kind, most first ("coverage 3, confidence 1").
func kinds[K ~string](m map[K]int) string {
	type kn struct {
		k string
		n int
	}
	var l []kn
	for k, n := range m {
		l = append(l, kn{string(k), n})
	}
	slices.SortFunc(l, func(a, b kn) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.k, b.k)) })
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprintf("%s %d", x.k, x.n)
	}
	return strings.Join(parts, ", ")
}

func sortStrings(s []string) { slices.Sort(s) }

// budgetRows is the session's usage against its limits.
func budgetRows(c *checkpoint.Checkpoint, r *iterate.Report) []budgetRow {
	var out []budgetRow
	add := func(res string, used, limit float64, usedS, limitS string) {
		br := budgetRow{Resource: res, Used: usedS, Limit: "none"}
		if limit > 0 {
			br.Limit = limitS
			br.Share = pct(used / limit * 100)
			br.Over = used > limit
		}
		out = append(out, br)
	}
	u, l := r.Usage, r.Limits
	add("tokens", float64(u.Tokens), float64(l.Tokens), strconv.FormatInt(u.Tokens, 10), strconv.FormatInt(l.Tokens, 10))
	if u.Cost != 0 || l.Cost > 0 {
		add("cost", u.Cost, l.Cost, number(u.Cost), number(l.Cost))
	}
	add("calls", float64(u.Calls), float64(l.Calls), strconv.FormatInt(u.Calls, 10), strconv.FormatInt(l.Calls, 10))
	add("time in iterations", r.Elapsed.Seconds(), l.Wall.Seconds(), r.Elapsed.Round(time.Millisecond).String(), l.Wall.String())
	if l.Iterations > 0 {
		// The budget's own limit of iterations (budget.Limits.Iterations,
		// which an extension raises), apart from the loop's maximum:
		// a session stopped at it shows it spent.
		add("iterations (budget)", float64(u.Iterations), float64(l.Iterations), strconv.Itoa(u.Iterations), strconv.Itoa(l.Iterations))
	}
	// The iteration limit grows when an escalation is answered, so the
	// settings' limit is no share of the iterations run: it is shown as
	// the limit the loop started under.
	its := budgetRow{Resource: "iterations", Used: strconv.Itoa(c.Iteration), Limit: "none"}
	if m := r.History.MaxIterations; m > 0 {
		its.Limit = strconv.Itoa(m)
		if c.Iteration <= m {
			its.Share = pct(float64(c.Iteration) / float64(m) * 100)
		} else {
			its.Limit += " (raised by answers)"
		}
	}
	return append(out, its)
}

// goValue matches a Go value's dump ("pkg.Type{Field:…}" or "&pkg.Type{…"),
// or a named list's ("converge.anyOf[…]", as converge.Any describes).
var goValue = regexp.MustCompile(`^[&*]?\[?\]?[A-Za-z_][\w.]*[{[]`)

// settings makes the loop's settings readable: a zero limit reads "none"
// (the budget's iteration limit is left out when unset beside max
// iterations), and a Go value's dump is shown as its type, with the dump as
// a detail.
func settings(in [][2]string) []setting {
	out := make([]setting, 0, len(in))
	maxIterations := slices.ContainsFunc(in, func(s [2]string) bool { return s[0] == "max iterations" && s[1] != "0" })
	for _, s := range in {
		if s[0] == "iteration limit" && s[1] == "0" && maxIterations {
			continue // the budget's, unset: "max iterations" is the loop's limit
		}
		st := setting{Name: s[0], Value: s[1]}
		switch {
		case st.Value == "":
			st.Value = "none"
		case (strings.HasSuffix(st.Name, " limit") || st.Name == "warn-only resources" || st.Name == "budget warning level") &&
			(st.Value == "0" || st.Value == "0s"):
			st.Value = "none"
		case st.Name == "history window" && st.Value == "0":
			st.Value = "default (" + strconv.Itoa(converge.DefaultWindow) + ")"
		case goValue.MatchString(st.Value) && !strings.HasPrefix(st.Value, "map["):
			i := strings.IndexAny(st.Value, "{[")
			typ := strings.TrimLeft(st.Value[:i], "&*")
			if j := strings.LastIndexByte(typ, '.'); j >= 0 {
				typ = typ[j+1:]
			}
			st.Value, st.Detail = typ, fieldsOf(s[1][i:])
		}
		out = append(out, st)
	}
	return out
}

// fieldsOf lays out the fields of a Go value's dump, "{A:1, B:map[]}",
// one "A: 1" a line (or the items of a list, "[a, b]", one a line); a dump
// it does not parse is returned as it is.
func fieldsOf(dump string) string {
	if len(dump) < 2 || !(dump[0] == '{' && dump[len(dump)-1] == '}' || dump[0] == '[' && dump[len(dump)-1] == ']') {
		return dump
	}
	in := dump[1 : len(dump)-1]
	var lines []string
	depth, start := 0, 0
	for i := 0; i <= len(in); i++ {
		if i < len(in) {
			switch in[i] {
			case '{', '[', '(':
				depth++
				continue
			case '}', ']', ')':
				depth--
				continue
			case ',':
				if depth != 0 {
					continue
				}
			default:
				continue
			}
		}
		f := strings.TrimSpace(in[start:i])
		start = i + 1
		if f == "" {
			continue
		}
		if k, v, ok := strings.Cut(f, ":"); ok && !strings.ContainsAny(k, " {[") {
			f = k + ": " + v
		}
		lines = append(lines, f)
	}
	if depth != 0 || len(lines) == 0 {
		return dump
	}
	return strings.Join(lines, "\n")
}

// pct formats a percentage: whole above 10, with a decimal below.
func pct(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(v, 'f', 0, 64) + "%"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "%"
}
