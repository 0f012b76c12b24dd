package view

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// ErrExtended is the error an [Extender] returns for a session whose
// budget extension is requested already (at that generation); the form's
// POST then gets 409.
var ErrExtended = errors.New("a budget extension of this session is requested already")

// Extender records a request to resume a session stopped with
// budget_exhausted, saved as generation gen, under the raised limits to
// (as iterate.ExtendBudget takes them), by who (as [AnswerBy] tells it),
// durably and once per generation (else an error matching ErrExtended).
// The viewer runs no loop: the host reads the request and resumes the
// session with iterate.ExtendBudget. [DirExtensions] records them in a
// directory.
type Extender interface {
	ExtendBudget(ctx context.Context, session string, gen uint64, to budget.Limits, by string) error
}

// ExtensionReader is what an [Extender] may also implement to tell the
// extension recorded for the stop of session saved as generation gen
// (nil and no error when none): the session's page then shows it, and
// no form, until the session stops again. [DirExtensions] implements it.
type ExtensionReader interface {
	Extension(ctx context.Context, session string, gen uint64) (*ExtensionRecord, error)
}

// Extends adds to the page of a session stopped with budget_exhausted, or
// parked at its budget's limit (iterate.WithParkAtLimit: escalated, its
// Escalation.Parked set, its question not answered), a form raising its
// limits (tokens, cost, calls, time), recorded through e; once an
// extension is recorded (Extra.Extension, or e's [ExtensionReader]) the
// page shows it instead. It is off without this option. The form carries a token bound to the
// session, to the generation and to a secret of this handler, and POSTs
// are checked as an answer's are; a request that lowers a limit, sets
// one where there was none, or raises none is refused (400), one for a
// session that moved on or is requested already too (409).
func Extends(e Extender) Option {
	return func(h *Handler) error {
		if e == nil {
			return errors.New("view: Extends with a nil Extender")
		}
		h.extender = e
		return nil
	}
}

// extendToken is the extension form's token of session at generation gen.
func (h *Handler) extendToken(session string, gen uint64) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte("extend\x00"))
	m.Write([]byte(session))
	m.Write([]byte("\x00" + strconv.FormatUint(gen, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// raised returns from with the form's limits, checking that each is raised
// or removed (0: none) and one at least changed.
func raised(from budget.Limits, form url.Values) (budget.Limits, error) {
	to := from
	var err error
	parseInt := func(k string) int64 {
		v, e := strconv.ParseInt(strings.TrimSpace(form.Get(k)), 10, 64)
		if e != nil || v < 0 {
			err = errors.Join(err, fmt.Errorf("%s %q: not a count", k, form.Get(k)))
		}
		return v
	}
	to.Tokens, to.Calls = parseInt("tokens"), parseInt("calls")
	if err != nil {
		return from, err
	}
	cost, cerr := strconv.ParseFloat(strings.TrimSpace(form.Get("cost")), 64)
	if cerr != nil || cost < 0 || cost != cost {
		return from, fmt.Errorf("cost %q: not an amount", form.Get("cost"))
	}
	to.Cost = cost
	if w := strings.TrimSpace(form.Get("wall")); w == "" || w == "none" {
		to.Wall = 0
	} else if d, derr := time.ParseDuration(w); derr != nil || d < 0 {
		return from, fmt.Errorf("time %q: not a duration", w)
	} else {
		to.Wall = d
	}
	changed := false
	for _, l := range []struct {
		name     string
		old, new float64
	}{{"tokens", float64(from.Tokens), float64(to.Tokens)}, {"cost", from.Cost, to.Cost},
		{"calls", float64(from.Calls), float64(to.Calls)}, {"time", from.Wall.Seconds(), to.Wall.Seconds()}} {
		switch {
		case l.old == l.new:
		case l.old == 0:
			return from, fmt.Errorf("%s: the session had no limit; an extension only raises limits", l.name)
		case l.new != 0 && l.new < l.old:
			return from, fmt.Errorf("%s: lowered; an extension only raises limits", l.name)
		default:
			changed = true
		}
	}
	if !changed {
		return from, errors.New("no limit raised")
	}
	return to, nil
}

func (h *Handler) extend(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form does not read: "+err.Error(), http.StatusBadRequest)
		return
	}
	gen, gerr := strconv.ParseUint(r.PostForm.Get("generation"), 10, 64)
	if gerr != nil || !hmac.Equal([]byte(r.PostForm.Get("token")), []byte(h.extendToken(name, gen))) {
		http.Error(w, "the form's token is missing or wrong: reload the page and extend again", http.StatusForbidden)
		return
	}
	ctx := r.Context()
	c, err := h.store.Load(ctx, name)
	if err != nil {
		h.fail(w, err)
		return
	}
	rep, err := iterate.Inspect(c)
	if c.Generation != gen || !atBudget(c, rep) {
		http.Error(w, fmt.Sprintf("%v: the session moved on (generation %d, %s) since the page showed it: reload it", ErrExtended, c.Generation, c.Status), http.StatusConflict)
		return
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	// A second request for the stop is the Extender's to refuse (once per
	// generation), naming the one accepted when it can.
	if x, _ := h.extraOf(ctx, name); c.Status == string(iterate.Escalated) && x.Answered {
		http.Error(w, fmt.Sprintf("%v: its question is answered already: reload the page", ErrExtended), http.StatusConflict)
		return
	}
	to, err := raised(rep.Limits, r.PostForm)
	if err != nil {
		http.Error(w, "extending: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.recorded(w, name, "extending", h.extender.ExtendBudget(ctx, name, gen, to, h.requestBy(r)))
}

// atBudget reports whether the checkpoint c, whose engine record is rep
// (nil when it does not read), stopped at its budget: budget_exhausted,
// or parked (escalated with Escalation.Parked).
func atBudget(c *checkpoint.Checkpoint, rep *iterate.Report) bool {
	switch iterate.Status(c.Status) {
	case iterate.BudgetExhausted:
		return true
	case iterate.Escalated:
		return rep != nil && rep.Escalation != nil && rep.Escalation.Parked != nil
	}
	return false
}

// extensionOf returns the extension recorded for the stop of session
// saved as generation gen: the host's (x.Extension, for that generation
// or an unnamed one), else the Extender's when it is an
// [ExtensionReader]; nil when none.
func (h *Handler) extensionOf(ctx context.Context, session string, gen uint64, x Extra) (*ExtensionRecord, error) {
	if e := x.Extension; e != nil && (e.Generation == gen || e.Generation == 0) {
		return e, nil
	}
	if r, ok := h.extender.(ExtensionReader); ok {
		return r.Extension(ctx, session, gen)
	}
	return nil, nil
}

// limitsText writes the hard limits of l, e.g. "tokens 500, calls 100"
// ("no limits" when none is set).
func limitsText(l budget.Limits) string {
	var parts []string
	if l.Iterations != 0 {
		parts = append(parts, fmt.Sprint("iterations ", l.Iterations))
	}
	if l.Tokens != 0 {
		parts = append(parts, fmt.Sprint("tokens ", l.Tokens))
	}
	if l.Cost != 0 {
		parts = append(parts, "cost "+number(l.Cost))
	}
	if l.Calls != 0 {
		parts = append(parts, fmt.Sprint("calls ", l.Calls))
	}
	if l.Wall != 0 {
		parts = append(parts, "time "+l.Wall.String())
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, ", ")
}

// requestBy is who makes request r, as [AnswerBy] tells it ("" without
// it).
func (h *Handler) requestBy(r *http.Request) string {
	if h.answerBy == nil {
		return ""
	}
	return h.answerBy(r)
}

// recorded ends the POST of an action on session whose request was
// recorded with the error err: 409 saying what failed while doing, or a
// redirect to the session's page.
func (h *Handler) recorded(w http.ResponseWriter, session, doing string, err error) {
	if err != nil {
		http.Error(w, doing+": "+err.Error(), http.StatusConflict)
		return
	}
	w.Header().Set("Location", "../"+url.PathEscape(session))
	w.WriteHeader(http.StatusSeeOther)
}

// ExtensionRecord is a budget extension requested from a viewer, as
// [DirExtensions] records it.
type ExtensionRecord struct {
	// Generation is that of the checkpoint extended (budget_exhausted or
	// parked); To
	// the limits to resume under (iterate.ExtendBudget's); By who asked
	// ("" when unknown), At when.
	Generation uint64
	To         budget.Limits
	By         string
	At         time.Time
}

// DirExtensions records the budget extensions requested for sessions kept
// in a directory, as [DirAnswers] records answers: a file of its own each,
// in the directory Path, named after the session and the generation, its
// [ExtensionRecord] as JSON, written whole, synced and linked into place,
// once per generation (a second request gets an error matching
// ErrExtended). The host reads it with [ReadDirExtension] and resumes the
// session with iterate.ExtendBudget(rec.To, rec.By).
type DirExtensions struct {
	// Path is the requests' directory; it is created (0700) when missing.
	Path string
	// Now tells the time a request is recorded at; time.Now when nil.
	Now func() time.Time
}

// dirExtensionName is the file of the extension of session at gen.
func dirExtensionName(session string, gen uint64) string {
	return fmt.Sprintf("%s.%020d.extend", session, gen)
}

// ExtendBudget records the request, durably, unless one is recorded.
func (d DirExtensions) ExtendBudget(ctx context.Context, session string, gen uint64, to budget.Limits, by string) error {
	if err := checkpoint.ValidateSession(session); err != nil {
		return err
	}
	err := recordOnce(ctx, "DirExtensions", d.Path, dirExtensionName(session, gen), "extension", d.Now, func(at time.Time) any {
		return ExtensionRecord{Generation: gen, To: to, By: by, At: at}
	})
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: generation %d of %s", ErrExtended, gen, session)
	}
	return err
}

// Extension returns the extension recorded for session at generation
// gen, nil when none ([ExtensionReader]).
func (d DirExtensions) Extension(_ context.Context, session string, gen uint64) (*ExtensionRecord, error) {
	rec, err := ReadDirExtension(d.Path, session, gen)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return rec, err
}

// ReadDirExtension reads the extension a [DirExtensions] of the directory
// path recorded for session at generation gen; an error matching
// fs.ErrNotExist when there is none.
func ReadDirExtension(path, session string, gen uint64) (*ExtensionRecord, error) {
	if err := checkpoint.ValidateSession(session); err != nil {
		return nil, err
	}
	var rec ExtensionRecord
	if err := readRecord(path, dirExtensionName(session, gen), "extension", fmt.Sprintf("of generation %d of %s", gen, session), &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}
