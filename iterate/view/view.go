// Package view serves a live, read-only view of the sessions of a checkpoint
// store as an [http.Handler] that a host mounts in its own service: a page
// listing the sessions (status, iteration, age, open question, origin),
// filterable by status and text, 100 a page in the order of their names
// (a page reads the store's listing only as far as it needs), and a page
// per session with its timeline (each iteration's action, gaps by kind and
// priority, usage against the budget, duration, failed tasks; the
// iteration just completed included), its decision and unmet criteria, its
// best iteration (the engine's kept best, iterate.WithKeepBest), its
// origin and a link to its forks, its escalations and their accepted
// answers, its kept generations, its settings and charts of the metrics the
// host declares ([Metrics]). A running session that no process holds (a
// directory's lock file naming a process that is gone; a fleet session no
// worker holds) is told apart from a live one, and a damaged newest
// generation is named. The handler answers only to the hosts [Hosts]
// allows (the loopback names by default), against DNS rebinding. When the store loads generations ([GenerationStore])
// and the newest history window dropped early iterations, the timeline is
// completed from older kept generations. A session page of a loop that has not
// ended follows it as it runs, polling a small JSON endpoint.
//
// Everything a page shows of a session is treated as untrusted and escaped.
// Answering escalations is off unless the host enables it with [Answers];
// the form is protected against cross-site requests.
//
// Mount the handler under a prefix with [http.StripPrefix]:
//
//	h, err := view.New(store)
//	...
//	mux.Handle("/refine/", http.StripPrefix("/refine", h))
//
// Its pages link to each other with relative URLs, so any prefix works.
package view

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// Lister lists the sessions of a store as their newest checkpoints'
// envelopes (Engine and State may be nil), as checkpoint.Dir,
// checkpoint.Memory and pgcheckpoint.Store do.
type Lister interface {
	Sessions(ctx context.Context) iter.Seq2[*checkpoint.Checkpoint, error]
}

// PageLister is what a [Lister] may also implement to list its sessions
// from a name on: SessionsAfter lists, as Sessions does, the sessions whose
// names sort after after ("" lists them all), in name order, reading them
// lazily, so that a page of the viewer's list costs what its rows cost,
// not what the sessions before it cost. checkpoint.Dir and
// pgcheckpoint.Store implement it (the latter with keyset queries of 100
// sessions).
type PageLister interface {
	SessionsAfter(ctx context.Context, after string) iter.Seq2[*checkpoint.Checkpoint, error]
}

// sessionsAfter lists the sessions of l after after, through its
// SessionsAfter if it has one, else by skipping those before.
func sessionsAfter(ctx context.Context, l Lister, after string) iter.Seq2[*checkpoint.Checkpoint, error] {
	if p, ok := l.(PageLister); ok {
		return p.SessionsAfter(ctx, after)
	}
	return func(yield func(*checkpoint.Checkpoint, error) bool) {
		for c, err := range l.Sessions(ctx) {
			if c != nil && after != "" && c.Session <= after {
				continue
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// Loader loads a session's newest checkpoint, with its engine record. A
// session that does not exist gives an error matching checkpoint.ErrNotFound.
type Loader interface {
	Load(ctx context.Context, session string) (*checkpoint.Checkpoint, error)
}

// Store is what the viewer reads: a store's sessions and their newest
// checkpoints. A store that also lists a session's kept generations (as
// iterate.GenerationLoader does, with the method of [Generationer]) has
// them shown on the session's page.
type Store interface {
	Lister
	Loader
}

// Generationer lists the kept generations of a session, oldest first, as
// envelopes; checkpoint.Dir, checkpoint.Memory and pgcheckpoint.Store
// implement it.
type Generationer interface {
	Generations(ctx context.Context, session string) ([]*checkpoint.Checkpoint, error)
}

// Answerer answers a session's open escalation; fleet.Fleet implements it.
type Answerer interface {
	Answer(ctx context.Context, session, answer string) error
}

// AnswerOnce is what an [Answerer] may also implement to accept one
// answer per escalation, atomically: AnswerOnce answers the escalation
// saved as generation gen of the session, recording who answered (as
// [AnswerBy] tells it, "" when unknown), only if it is still open and not
// answered, else it returns an error matching [ErrAnswered] (compare and
// set, in the store, so that two viewers, or two tabs, cannot both answer).
// Without it the handler refuses an answer to a session answered already
// (Extra.Answered), to another generation than the page's, and a second
// answer it took itself; between two processes a race remains.
type AnswerOnce interface {
	AnswerOnce(ctx context.Context, session string, gen uint64, answer, by string) error
}

// ErrAnswered is the error an [AnswerOnce] returns for an escalation
// answered already (or no longer open); the form's POST then gets 409.
var ErrAnswered = errors.New("the escalation is answered already")

// AnswerRecord is an accepted answer to a session's escalation, as the
// host records it (Extra.Answers).
type AnswerRecord struct {
	// Generation is that of the escalated checkpoint answered; Question
	// its question.
	Generation uint64
	Question   string
	// Iteration is the iteration the question was asked at, when the host
	// tells it (a fleet does: fleet.Answer's): the page shows it once the
	// escalated generation is no longer kept. 0 when not told.
	Iteration int
	// Answer is the answer accepted; By who gave it ("" when unknown), At
	// when.
	Answer string
	By     string
	At     time.Time
}

// AnswerBy sets how the handler tells who answers, from the POST of the
// answer form: a host behind a proxy that authenticates its users reads
// the user it names (the handler has no authentication of its own). Who
// answered is passed to an [AnswerOnce] and shown beside the answer.
func AnswerBy(f func(r *http.Request) string) Option {
	return func(h *Handler) error {
		h.answerBy = f
		return nil
	}
}

// Option configures a [Handler].
type Option func(*Handler) error

// Metrics declares the metrics charted on a session's page, in order, one
// chart each. Without it, the page charts coverage, confidence, score,
// conflicts and every named score that some iteration of the session
// recorded as other than zero, and the gaps found; a session that recorded
// none of them and no gap (an agent loop judged by its gates) gets its
// failed tasks and tokens instead.
func Metrics(ms ...Metric) Option {
	return func(h *Handler) error {
		for _, m := range ms {
			if m.Name == "" {
				return errors.New("view: a metric without a name")
			}
		}
		h.metrics = append([]Metric(nil), ms...)
		return nil
	}
}

// Answers enables answering escalations from a session's page with a; the
// page of an escalated session then shows a form whose POST calls
// a.Answer (or its AnswerOnce, see [AnswerOnce]). The form carries a token
// bound to the session, to the escalated generation and to a secret of
// this handler, and cross-origin POSTs are refused; an answer to an
// escalation answered already, or no longer open, is refused (409).
func Answers(a Answerer) Option {
	return func(h *Handler) error {
		if a == nil {
			return errors.New("view: Answers with a nil Answerer")
		}
		h.answerer = a
		return nil
	}
}

// Extra is what a host knows of a session beyond its checkpoint, as a
// fleet does (fleet.Session's fields of the same names).
type Extra struct {
	// Holder names the worker holding the session's lease, "" unless live.
	Holder string
	// Kind is the session's kind of loop.
	Kind string
	// Answered is set once the session's escalation has been answered: its
	// page then shows no answer form, and says it waits for a worker, or
	// which worker (Holder) resumed it.
	Answered bool
	// Answers are the answers accepted to the session's escalations,
	// oldest first: each is shown with its question, who and when.
	Answers []AnswerRecord
	// Status is the session's status as the host knows it, for a session
	// the store has no checkpoint of yet: a fleet's queued sessions
	// (fleet.Queued) are listed with it.
	Status string
	// Links are the host's links about the session (a fleet's job in
	// riverui), shown on its page.
	Links []Link
	// Cancelled is set once the host cancelled the session for good
	// (fleet.Session.Cancelled), whatever its status: a stop at its
	// budget it was cancelled at is its end, and its page offers neither
	// an extension nor a cancel.
	Cancelled bool
	// Extension is the budget extension recorded for the session's
	// newest stop at its budget (budget_exhausted, or parked: see
	// [Extends]) and not yet resumed, as a fleet tells it
	// (fleet.Session.Extension): the session's page shows it (its limits,
	// who and when, each when known) instead of the extension form, and
	// follows the session until it is resumed; the list's row says it is
	// extended. Only a record of the stop's generation, or of none (0),
	// is that stop's. Nil when none; an [ExtensionReader] tells it too.
	Extension *ExtensionRecord
}

// Extras sets a function that tells what the host knows of each session
// beyond its checkpoint (by session name), shown on the pages: every
// session's, for each page of the list. A host with many sessions gives
// [ExtrasAfter] and [ExtraOf] instead, which read the sessions a page
// needs. An error is shown, and the pages go on without.
func Extras(f func(ctx context.Context) (map[string]Extra, error)) Option {
	return func(h *Handler) error {
		h.extras = f
		return nil
	}
}

// ExtraOf sets a function that tells what the host knows of one session
// beyond its checkpoint ([Extra]; the zero Extra when it knows nothing of
// it), for the pages and actions of one session: its page, its /live and
// its forms' POSTs then read that session's extras alone, not every
// session's through [Extras], whose function the list still uses unless
// [ExtrasAfter] is given (a session's page then costs the same however
// many sessions the host has). A fleet host adapts fleet.Fleet's Session to it. An error is
// shown, and the page goes on without.
func ExtraOf(f func(ctx context.Context, session string) (Extra, error)) Option {
	return func(h *Handler) error {
		h.extraOne = f
		return nil
	}
}

// Poll sets how often the page of a session that has not ended asks
// whether a newer checkpoint was saved (2 seconds by default; at least
// 100 milliseconds).
func Poll(d time.Duration) Option {
	return func(h *Handler) error {
		if d < 100*time.Millisecond {
			return fmt.Errorf("view: poll interval %s below 100ms", d)
		}
		h.poll = d
		return nil
	}
}

// Hosts sets the names the handler answers to, as a request's Host header
// gives them (without the port; a name matches case-insensitively, an
// address as an IP address): a request naming another host is refused
// (403), so that a page of another site whose name is made to resolve to
// the viewer's address (DNS rebinding) cannot read the pages nor their
// answer tokens. By default only the loopback names are allowed
// ("localhost", and 127.0.0.0/8 and ::1 as addresses); Hosts replaces
// them. A host that serves the viewer under its own name, or behind a
// proxy that keeps the client's Host, names it here.
func Hosts(names ...string) Option {
	return func(h *Handler) error {
		h.hosts = map[string]bool{}
		for _, n := range names {
			n = strings.ToLower(strings.TrimSuffix(strings.Trim(n, "[]"), "."))
			if n == "" || strings.ContainsAny(n, "/ ") {
				return fmt.Errorf("view: Hosts: %q is not a host name", n)
			}
			if ip := net.ParseIP(n); ip != nil {
				n = ip.String()
			}
			h.hosts[n] = true
		}
		return nil
	}
}

// hostAllowed reports whether host, a request's Host header, names a host
// the handler answers to.
func (h *Handler) hostAllowed(host string) bool {
	name := host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		name = hn
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if name == "" {
		return false
	}
	ip := net.ParseIP(name)
	if h.hosts == nil {
		return name == "localhost" || ip != nil && ip.IsLoopback()
	}
	if ip != nil {
		name = ip.String()
	}
	return h.hosts[name]
}

// Title sets the title of the pages ("refine sessions" by default).
func Title(s string) Option {
	return func(h *Handler) error {
		h.title = s
		return nil
	}
}

// Handler serves the viewer's pages; see the package documentation. It is
// safe for concurrent use.
type Handler struct {
	store     Store
	metrics   []Metric
	answerer  Answerer
	canceller Canceller
	extender  Extender
	forker    Forker
	extras    func(ctx context.Context) (map[string]Extra, error)
	extraOne  func(ctx context.Context, session string) (Extra, error) // ExtraOf's
	// extrasAfter is ExtrasAfter's.
	extrasAfter func(ctx context.Context, after string, limit int) ([]SessionExtra, error)
	poll        time.Duration
	title       string
	secret      []byte
	now         func() time.Time
	mux         *http.ServeMux
	hosts       map[string]bool // nil: the loopback names
	answerBy    func(r *http.Request) string

	// answeredMu guards answered: the escalations (session and
	// generation) this handler took an answer to.
	answeredMu sync.Mutex
	answered   map[answerKey]bool
}

// answerKey names one escalation: a session's escalated generation.
type answerKey struct {
	session string
	gen     uint64
}

// New returns a Handler reading store.
func New(store Store, opts ...Option) (*Handler, error) {
	if store == nil {
		return nil, errors.New("view: nil store")
	}
	h := &Handler{store: store, poll: 2 * time.Second, title: "refine sessions", now: time.Now,
		secret: make([]byte, 32)}
	if _, err := rand.Read(h.secret); err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(h); err != nil {
			return nil, err
		}
	}
	if h.extrasAfter != nil && h.extraOne == nil {
		return nil, errors.New("view: ExtrasAfter without ExtraOf: a session's page would not read its extras")
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /{$}", h.list)
	h.mux.HandleFunc("GET /live", h.listLive)
	h.mux.HandleFunc("GET /session/{name}", h.session)
	h.mux.HandleFunc("GET /session/{name}/live", h.live)
	h.mux.HandleFunc("GET /session/{name}/forks", h.forks)
	if h.forker != nil {
		h.mux.Handle("POST /session/{name}/fork", http.NewCrossOriginProtection().Handler(http.HandlerFunc(h.fork)))
	}
	if h.extender != nil {
		h.mux.Handle("POST /session/{name}/extend", http.NewCrossOriginProtection().Handler(http.HandlerFunc(h.extend)))
	}
	if h.canceller != nil {
		h.mux.Handle("POST /session/{name}/cancel", http.NewCrossOriginProtection().Handler(http.HandlerFunc(h.cancel)))
	}
	if h.answerer != nil {
		h.mux.Handle("POST /session/{name}/answer", http.NewCrossOriginProtection().Handler(http.HandlerFunc(h.answer)))
	}
	return h, nil
}

// ServeHTTP serves the pages.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.admit(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

// token is the answer form's token of session's escalation saved as
// generation gen: a form answers the escalation its page showed.
func (h *Handler) token(session string, gen uint64) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte("answer\x00"))
	m.Write([]byte(session))
	m.Write([]byte("\x00" + strconv.FormatUint(gen, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// maxAnswer bounds an answer's size.
const maxAnswer = 64 << 10

func (h *Handler) answer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	r.Body = http.MaxBytesReader(w, r.Body, maxAnswer+4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form does not read: "+err.Error(), http.StatusBadRequest)
		return
	}
	tok := r.PostForm.Get("token")
	gen, gerr := strconv.ParseUint(r.PostForm.Get("generation"), 10, 64)
	if gerr != nil || !hmac.Equal([]byte(tok), []byte(h.token(name, gen))) {
		http.Error(w, "the form's token is missing or wrong: reload the page and answer again", http.StatusForbidden)
		return
	}
	ans := strings.TrimSpace(r.PostForm.Get("answer"))
	if ans == "" {
		http.Error(w, "an empty answer", http.StatusBadRequest)
		return
	}
	if len(ans) > maxAnswer {
		http.Error(w, "the answer is too long", http.StatusRequestEntityTooLarge)
		return
	}
	if err := h.answerOnce(r, name, gen, ans); err != nil {
		http.Error(w, "answering: "+err.Error(), http.StatusConflict)
		return
	}
	// A relative Location: http.Redirect would make it absolute from the
	// path the handler sees, without the prefix it is mounted under.
	w.Header().Set("Location", "../"+url.PathEscape(name))
	w.WriteHeader(http.StatusSeeOther)
}

// answerOnce answers the escalation of session saved as generation gen,
// once: refused when the session's newest checkpoint is no longer that
// escalation, when the host says it is answered, or when this handler took
// an answer to it already; through AnswerOnce when the Answerer has it.
func (h *Handler) answerOnce(r *http.Request, session string, gen uint64, answer string) error {
	ctx := r.Context()
	key := answerKey{session, gen}
	h.answeredMu.Lock()
	defer h.answeredMu.Unlock()
	if h.answered[key] {
		return fmt.Errorf("%w (from this viewer): reload the page to see the answer", ErrAnswered)
	}
	c, err := h.newest(ctx, session)
	if err != nil {
		return err
	}
	if c.Generation != gen || c.Status != string(iterate.Escalated) {
		return fmt.Errorf("%w: the session moved on (generation %d, %s) since the page showed its question: reload it", ErrAnswered, c.Generation, c.Status)
	}
	extra, xerr := h.extraOf(ctx, session)
	if xerr == nil && extra.Answered {
		return fmt.Errorf("%w: reload the page to see the answer", ErrAnswered)
	}
	// A parked session's extension is the answer to its question.
	if x, _ := h.extensionOf(ctx, session, gen, extra); x != nil {
		return fmt.Errorf("%w: its budget was extended: reload the page", ErrAnswered)
	}
	by := h.requestBy(r)
	if once, ok := h.answerer.(AnswerOnce); ok {
		err = once.AnswerOnce(ctx, session, gen, answer, by)
	} else {
		err = h.answerer.Answer(ctx, session, answer)
	}
	if err != nil {
		return err
	}
	if h.answered == nil {
		h.answered = map[answerKey]bool{}
	}
	h.answered[key] = true
	return nil
}

// Live is what the JSON endpoint of a session ("session/NAME/live") says
// of its newest checkpoint; a page polls it to reload when it changes.
type Live struct {
	Session    string    `json:"session"`
	Generation uint64    `json:"generation"`
	Status     string    `json:"status"`
	Iteration  int       `json:"iteration"`
	Saved      time.Time `json:"saved"`
	// Final is set when the session has ended for good: not while a stop
	// at its budget waits to be resumed under an extension recorded for
	// it (see [Extends]).
	Final bool `json:"final"`
	// Holding tells, of a running session, whether a process holds it
	// now: "held", "unheld" (its status is stale: the loop was killed, or
	// no fleet worker holds its lease), or "" when the store does not tell.
	Holding string `json:"holding"`
}

func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	c, err := h.newest(r.Context(), name)
	if errors.Is(err, checkpoint.ErrNotFound) {
		if x, _ := h.extraOf(r.Context(), name); x.Status != "" {
			c, err = &checkpoint.Checkpoint{Session: name, Status: x.Status}, nil
		}
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	l := Live{Session: c.Session, Generation: c.Generation, Status: c.Status,
		Iteration: c.Iteration, Saved: c.Time, Final: iterate.Status(c.Status).Final()}
	if c.Status == string(iterate.Running) {
		extra, err := h.extraOf(r.Context(), name)
		l.Holding = h.holding(name, extra, h.hasExtras() && err == nil)
	}
	if l.Final && c.Status == string(iterate.BudgetExhausted) {
		extra, _ := h.extraOf(r.Context(), name)
		if x, _ := h.extensionOf(r.Context(), name, c.Generation, extra); x != nil {
			l.Final = false // extended: it will be resumed
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(l)
}

// newest returns the envelope of the newest generation of session: from
// the store's Generations when it lists them (envelopes only, without the
// state), else from Load.
func (h *Handler) newest(ctx context.Context, session string) (*checkpoint.Checkpoint, error) {
	g, ok := h.store.(Generationer)
	if !ok {
		return h.store.Load(ctx, session)
	}
	gens, err := g.Generations(ctx, session)
	if err != nil {
		return nil, err
	}
	if len(gens) == 0 {
		return nil, fmt.Errorf("%w: session %q", checkpoint.ErrNotFound, session)
	}
	return gens[len(gens)-1], nil
}

// fail answers an error reading the store.
func (h *Handler) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var se *checkpoint.SessionError
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		code = http.StatusNotFound
	case errors.As(err, &se):
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}

// link is the relative URL of a session's page from a page in the same
// folder ("./" keeps a name such as "javascript:x" a path).
func link(session string) string { return "./" + url.PathEscape(session) }
