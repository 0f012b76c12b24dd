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
	"strconv"
	"strings"
	"time"

	"github.com/refine-go/refine/checkpoint"
)

// ErrForkExists is the error a [Forker] returns for a fork whose new
// session's name is taken (a session, or a fork requested already); the
// form's POST then gets 409.
var ErrForkExists = errors.New("a session of that name exists or is requested already")

// Forker records a request to fork session from, at its kept generation
// gen, as the new session to, by who (as [AnswerBy] tells it), durably
// and once per new name (else an error matching ErrForkExists). The
// viewer runs no loop: the host reads the request and runs the fork with
// iterate.ForkFrom. [DirForks] records them in a directory.
type Forker interface {
	Fork(ctx context.Context, from string, gen uint64, to, by string) error
}

// Forks adds to each session's page a form requesting a fork of it from
// one of its generations (the one shown by default) as a new session,
// recorded through f. It is off without this option. The form carries a
// token bound to the session and to a secret of this handler, and POSTs
// are checked as an answer's are; a name that is no valid session name
// (400), that of a session of the store (409), or a generation the store
// does not keep (400) is refused.
func Forks(f Forker) Option {
	return func(h *Handler) error {
		if f == nil {
			return errors.New("view: Forks with a nil Forker")
		}
		h.forker = f
		return nil
	}
}

// forkToken is the fork form's token of session.
func (h *Handler) forkToken(session string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte("fork\x00"))
	m.Write([]byte(session))
	return hex.EncodeToString(m.Sum(nil))
}

func (h *Handler) fork(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form does not read: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !hmac.Equal([]byte(r.PostForm.Get("token")), []byte(h.forkToken(name))) {
		http.Error(w, "the form's token is missing or wrong: reload the page and fork again", http.StatusForbidden)
		return
	}
	gen, err := strconv.ParseUint(r.PostForm.Get("generation"), 10, 64)
	if err != nil {
		http.Error(w, "the generation does not read: "+err.Error(), http.StatusBadRequest)
		return
	}
	to := strings.TrimSpace(r.PostForm.Get("to"))
	if err := checkpoint.ValidateSession(to); err != nil || to == name {
		http.Error(w, fmt.Sprintf("the new session's name %q: not a session name, or the forked one's", to), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	if gl, ok := h.store.(generationLoader); ok {
		if _, err := gl.LoadGeneration(ctx, name, gen); err != nil {
			http.Error(w, fmt.Sprintf("generation %d of %s does not load: %v", gen, name, err), http.StatusBadRequest)
			return
		}
	}
	if _, err := h.store.Load(ctx, to); !errors.Is(err, checkpoint.ErrNotFound) {
		http.Error(w, fmt.Sprintf("%v: %s", ErrForkExists, to), http.StatusConflict)
		return
	}
	h.recorded(w, name, "forking", h.forker.Fork(ctx, name, gen, to, h.requestBy(r)))
}

// ForkRecord is a fork requested from a viewer, as [DirForks] records it.
type ForkRecord struct {
	// From and Generation name the generation forked, To the new session;
	// By who asked ("" when unknown), At when.
	From       string
	Generation uint64
	To         string
	By         string
	At         time.Time
}

// DirForks records the forks requested from a viewer, as [DirAnswers]
// records answers: a file of its own each, in the directory Path, named
// after the new session, its [ForkRecord] as JSON, written whole, synced
// and linked into place, once per new name (a second request gets an
// error matching ErrForkExists). The host reads it with [ReadDirFork] and
// runs the fork: iterate.New(…, iterate.WithSession(rec.To)).Resume(ctx,
// iterate.ForkFrom(rec.From, rec.Generation)).
type DirForks struct {
	// Path is the requests' directory; it is created (0700) when missing.
	Path string
	// Now tells the time a request is recorded at; time.Now when nil.
	Now func() time.Time
}

// Fork records the request, durably, unless one for to is recorded.
func (d DirForks) Fork(ctx context.Context, from string, gen uint64, to, by string) error {
	for _, s := range []string{from, to} {
		if err := checkpoint.ValidateSession(s); err != nil {
			return err
		}
	}
	err := recordOnce(ctx, "DirForks", d.Path, to+".fork", "fork", d.Now, func(at time.Time) any {
		return ForkRecord{From: from, Generation: gen, To: to, By: by, At: at}
	})
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrForkExists, to)
	}
	return err
}

// ReadDirFork reads the fork a [DirForks] of the directory path recorded
// as the new session to; an error matching fs.ErrNotExist when there is
// none.
func ReadDirFork(path, to string) (*ForkRecord, error) {
	if err := checkpoint.ValidateSession(to); err != nil {
		return nil, err
	}
	var rec ForkRecord
	if err := readRecord(path, to+".fork", "fork", to, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}
