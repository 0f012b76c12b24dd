package checkpointtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/refine-go/refine/checkpoint"
)

// checks are the conformance checks, shared by Test and Run.
var checks = []check{
	{"not_found", checkNotFound},
	{"round_trip", checkRoundTrip},
	{"round_trip_best_and_origin", checkBestAndOrigin},
	{"generation_order", checkGenerationOrder},
	{"sessions_isolated", checkSessionsIsolated},
	{"load_returns_copy", checkLoadReturnsCopy},
	{"save_copies", checkSaveCopies},
	{"state_sizes", checkStateSizes},
	{"concurrent_saves", checkConcurrentSaves},
	{"invalid_input", checkInvalidInput},
	{"cancelled_context", checkCancelledContext},
	{"lock", checkLock},
	{"lock_tokens", checkLockTokens},
	{"fencing", checkFencing},
	{"remove", checkRemove},
	{"sessions", checkSessions},
	{"stream", checkStream},
	{"generations", checkGenerations},
}

// save saves c, reporting a failure; it returns whether the save succeeded.
func save(ctx context.Context, r *report, s Store, c *checkpoint.Checkpoint) bool {
	if err := s.Save(ctx, c); err != nil {
		r.errorf("Save(session %q, generation %d, token %d): %v", c.Session, c.Generation, c.Token, err)
		return false
	}
	return true
}

// load loads session, reporting a failure; nil if it failed.
func load(ctx context.Context, r *report, s Store, session string) *checkpoint.Checkpoint {
	c, err := s.Load(ctx, session)
	if err != nil {
		r.errorf("Load(%q): %v", session, err)
		return nil
	}
	if c == nil {
		r.errorf("Load(%q) returned nil and no error", session)
	}
	return c
}

// expect reports a difference between want and what Load returns.
func expect(ctx context.Context, r *report, s Store, want *checkpoint.Checkpoint, what string) {
	got := load(ctx, r, s, want.Session)
	if got == nil {
		return
	}
	if diff := Diff(want, got); diff != "" {
		r.errorf("%s: Load(%q) mismatch (-want +got):\n%s", what, want.Session, diff)
	}
}

// lockOf locks session, reporting a failure.
func lockOf(ctx context.Context, r *report, l locker, session string) (uint64, func() error, bool) {
	token, release, err := l.Lock(ctx, session)
	if err != nil {
		r.errorf("Lock(%q): %v", session, err)
		return 0, nil, false
	}
	if release == nil {
		r.errorf("Lock(%q) returned a nil release function", session)
		return 0, nil, false
	}
	if token == 0 {
		r.errorf("Lock(%q) returned token 0, want a fencing token above 0", session)
	}
	return token, release, true
}

func checkNotFound(ctx context.Context, s Store, r *report) {
	if _, err := s.Load(ctx, "never-saved"); !errors.Is(err, checkpoint.ErrNotFound) {
		r.errorf("Load of a session never saved: got error %v, want one matching checkpoint.ErrNotFound", err)
	}
}

// checkRoundTrip: every envelope field comes back, the token included when
// the store can issue one; Skipped does not.
func checkRoundTrip(ctx context.Context, s Store, r *report) {
	want := Checkpoint("round-trip", 1)
	if l, ok := s.(locker); ok {
		token, release, ok := lockOf(ctx, r, l, want.Session)
		if !ok {
			return
		}
		defer release()
		want.Token = token
	}
	in := want.Clone()
	in.Skipped = []uint64{9, 7}
	if save(ctx, r, s, in) {
		expect(ctx, r, s, want, "round trip (Skipped is never saved)")
	}
}

func checkGenerationOrder(ctx context.Context, s Store, r *report) {
	for gen := uint64(1); gen <= 5; gen++ {
		if !save(ctx, r, s, Checkpoint("gens", gen)) {
			return
		}
	}
	expect(ctx, r, s, Checkpoint("gens", 5), "after saving generations 1 to 5")
	// The latest save wins even with a lower generation, which it gets
	// raised above the newest.
	if !save(ctx, r, s, Checkpoint("gens", 3)) {
		return
	}
	got := load(ctx, r, s, "gens")
	if got == nil {
		return
	}
	want := Checkpoint("gens", 3)
	want.Generation = 6
	if diff := Diff(want, got); diff != "" {
		r.errorf("after saving generation 3 over 5, Load mismatch (-want the save as generation 6 +got):\n%s", diff)
	}
}

func checkSessionsIsolated(ctx context.Context, s Store, r *report) {
	a, b := Checkpoint("alpha", 3), Checkpoint("beta", 1)
	if !save(ctx, r, s, a) || !save(ctx, r, s, b) {
		return
	}
	expect(ctx, r, s, a, "two sessions")
	expect(ctx, r, s, b, "two sessions")
	if _, err := s.Load(ctx, "alph"); !errors.Is(err, checkpoint.ErrNotFound) {
		r.errorf("Load of a prefix of a saved session: got error %v, want checkpoint.ErrNotFound", err)
	}
	if rm, ok := s.(remover); ok {
		if err := rm.Remove(ctx, "alpha"); err != nil {
			r.errorf("Remove(alpha): %v", err)
			return
		}
		expect(ctx, r, s, b, "after Remove(alpha)")
	}
}

func checkLoadReturnsCopy(ctx context.Context, s Store, r *report) {
	if !save(ctx, r, s, Checkpoint("copy-out", 2)) {
		return
	}
	if got := load(ctx, r, s, "copy-out"); got != nil {
		scribble(got)
		expect(ctx, r, s, Checkpoint("copy-out", 2), "changing a loaded checkpoint changed the store")
	}
}

func checkSaveCopies(ctx context.Context, s Store, r *report) {
	c := Checkpoint("copy-in", 2)
	if !save(ctx, r, s, c) {
		return
	}
	if diff := Diff(Checkpoint("copy-in", 2), c); diff != "" {
		r.errorf("Save modified its argument (-want +got):\n%s", diff)
	}
	scribble(c)
	expect(ctx, r, s, Checkpoint("copy-in", 2), "changing a checkpoint after Save changed the store")
}

func checkStateSizes(ctx context.Context, s Store, r *report) {
	for _, size := range []int{0, 1, 1 << 20} {
		want := Checkpoint(fmt.Sprint("sized-", size), 1)
		want.State = pattern(size)
		want.Engine = pattern(size / 2)
		if !save(ctx, r, s, want) {
			continue
		}
		got := load(ctx, r, s, want.Session)
		if got == nil {
			continue
		}
		if !bytes.Equal(want.State, got.State) {
			r.errorf("State of %d bytes came back as %d bytes, different", len(want.State), len(got.State))
		}
		if diff := Diff(want, got); diff != "" {
			r.errorf("state of %d bytes: Load mismatch (-want +got):\n%s", size, diff)
		}
	}
}

func checkConcurrentSaves(ctx context.Context, s Store, r *report) {
	const sessions, gens = 8, 4
	errs := make(chan error, sessions*gens)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			for gen := uint64(1); gen <= gens; gen++ {
				if err := s.Save(ctx, Checkpoint(fmt.Sprint("parallel-", i), gen)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		r.errorf("concurrent Save: %v", err)
	}
	for i := range sessions {
		expect(ctx, r, s, Checkpoint(fmt.Sprint("parallel-", i), gens), "after concurrent saves")
	}
}

// invalidSessions are names every store must reject.
var invalidSessions = []string{"", "../escape", "a/b", `a\b`, ".hidden", "tab\t", strings.Repeat("x", checkpoint.MaxSessionLen+1), strings.Repeat("y", 10000)}

func checkInvalidInput(ctx context.Context, s Store, r *report) {
	if err := s.Save(ctx, nil); !errors.Is(err, checkpoint.ErrNilCheckpoint) {
		r.errorf("Save(nil): got error %v, want checkpoint.ErrNilCheckpoint", err)
	}
	l, canLock := s.(locker)
	rm, canRemove := s.(remover)
	for _, session := range invalidSessions {
		name := session
		if len(name) > 20 {
			name = fmt.Sprintf("%.20s… (%d bytes)", name, len(name))
		}
		errs := map[string]error{
			"Save": s.Save(ctx, Checkpoint(session, 1)),
		}
		_, errs["Load"] = s.Load(ctx, session)
		if canLock {
			var release func() error
			_, release, errs["Lock"] = l.Lock(ctx, session)
			if errs["Lock"] == nil && release != nil {
				release()
			}
		}
		if canRemove {
			errs["Remove"] = rm.Remove(ctx, session)
		}
		for _, op := range []string{"Save", "Load", "Lock", "Remove"} {
			err, ok := errs[op]
			if !ok {
				continue
			}
			if !errors.Is(err, checkpoint.ErrInvalidSession) {
				r.errorf("%s of session %q: got error %v, want checkpoint.ErrInvalidSession", op, name, err)
			} else if len(session) > 1000 && len(err.Error()) > 1000 {
				r.errorf("%s of a session of %d bytes: the error (%d bytes) echoes the name whole", op, len(session), len(err.Error()))
			}
		}
	}
}

func checkCancelledContext(ctx context.Context, s Store, r *report) {
	if !save(ctx, r, s, Checkpoint("cancel", 1)) {
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Save(cctx, Checkpoint("cancel", 2)); !errors.Is(err, context.Canceled) {
		r.errorf("Save under a cancelled context: got error %v, want context.Canceled", err)
	}
	if _, err := s.Load(cctx, "cancel"); !errors.Is(err, context.Canceled) {
		r.errorf("Load under a cancelled context: got error %v, want context.Canceled", err)
	}
	if l, ok := s.(locker); ok {
		if _, release, err := l.Lock(cctx, "cancel"); !errors.Is(err, context.Canceled) {
			if err == nil && release != nil {
				release()
			}
			r.errorf("Lock under a cancelled context: got error %v, want context.Canceled", err)
		}
	}
	if rm, ok := s.(remover); ok {
		if err := rm.Remove(cctx, "cancel"); !errors.Is(err, context.Canceled) {
			r.errorf("Remove under a cancelled context: got error %v, want context.Canceled", err)
		}
	}
	expect(ctx, r, s, Checkpoint("cancel", 1), "calls under a cancelled context changed the store")
}

func checkLock(ctx context.Context, s Store, r *report) {
	l, ok := s.(locker)
	if !ok {
		r.skip = "store has no Lock method"
		return
	}
	_, release, ok := lockOf(ctx, r, l, "locked")
	if !ok {
		return
	}
	_, again, err := l.Lock(ctx, "locked")
	var le *checkpoint.LockedError
	switch {
	case err == nil:
		if again != nil {
			again()
		}
		r.errorf("second Lock of a held session succeeded, want a *checkpoint.LockedError")
	case !errors.Is(err, checkpoint.ErrLocked) || !errors.As(err, &le):
		r.errorf("second Lock of a held session: got error %v, want a *checkpoint.LockedError", err)
	case le.Session != "locked":
		r.errorf("LockedError.Session = %q, want %q", le.Session, "locked")
	}
	if _, other, ok := lockOf(ctx, r, l, "other"); ok {
		if err := other(); err != nil {
			r.errorf("release of the other session: %v", err)
		}
	}
	if err := release(); err != nil {
		r.errorf("release: %v", err)
	}
	if err := release(); err != nil {
		r.errorf("second release: %v", err)
	}
	if _, again, ok := lockOf(ctx, r, l, "locked"); ok {
		if err := again(); err != nil {
			r.errorf("release after relocking: %v", err)
		}
	}
}

func checkLockTokens(ctx context.Context, s Store, r *report) {
	l, ok := s.(locker)
	if !ok {
		r.skip = "store has no Lock method"
		return
	}
	var prev uint64
	for i := range 3 {
		token, release, ok := lockOf(ctx, r, l, "tokens")
		if !ok {
			return
		}
		if i > 0 && token <= prev {
			r.errorf("holder %d got token %d, not above the previous holder's %d", i+1, token, prev)
		}
		c := Checkpoint("tokens", uint64(i+1))
		c.Token = token
		ok = save(ctx, r, s, c)
		if err := release(); err != nil {
			r.errorf("release: %v", err)
		}
		if !ok {
			return
		}
		prev = token
	}
}

// checkFencing: a save with a token other than the held lock's is refused
// and changes nothing.
func checkFencing(ctx context.Context, s Store, r *report) {
	l, ok := s.(locker)
	if !ok {
		r.skip = "store has no Lock method"
		return
	}
	const session = "fenced"
	old, release, ok := lockOf(ctx, r, l, session)
	if !ok {
		return
	}
	first := Checkpoint(session, 1)
	first.Token = old
	ok = save(ctx, r, s, first)
	release()
	if !ok {
		return
	}
	stale := Checkpoint(session, 2)
	stale.Token = old
	refused := func(c *checkpoint.Checkpoint, what string, current uint64) {
		err := s.Save(ctx, c)
		var fe *checkpoint.FencedError
		if !errors.Is(err, checkpoint.ErrFenced) || !errors.As(err, &fe) {
			r.errorf("Save with %s: got error %v, want a *checkpoint.FencedError", what, err)
			return
		}
		if fe.Session != session || fe.Token != c.Token {
			r.errorf("Save with %s: FencedError names session %q token %d, want %q token %d", what, fe.Session, fe.Token, session, c.Token)
		}
		if current != 0 && fe.Current != current {
			r.errorf("Save with %s: FencedError.Current = %d, want the holder's token %d", what, fe.Current, current)
		}
	}
	refused(stale, "the token of a released lock", 0)

	token, release, ok := lockOf(ctx, r, l, session)
	if !ok {
		return
	}
	refused(stale, "the token of the previous holder", token)
	never := Checkpoint(session, 2)
	never.Token = token + 1000
	refused(never, "a token never issued", token)
	expect(ctx, r, s, first, "refused saves changed the store")

	current := Checkpoint(session, 3)
	current.Token = token
	if save(ctx, r, s, current) {
		expect(ctx, r, s, current, "the holder's save")
	}
	unfenced := Checkpoint(session, 4)
	if save(ctx, r, s, unfenced) {
		expect(ctx, r, s, unfenced, "a save without a token")
	}
	if err := release(); err != nil {
		r.errorf("release: %v", err)
	}
	current.Generation = 5
	refused(current, "the token of a lock released", 0)
}

func checkRemove(ctx context.Context, s Store, r *report) {
	rm, ok := s.(remover)
	if !ok {
		r.skip = "store has no Remove method"
		return
	}
	if err := rm.Remove(ctx, "absent"); err != nil {
		r.errorf("Remove of a session never saved: %v", err)
	}
	for gen := uint64(1); gen <= 3; gen++ {
		if !save(ctx, r, s, Checkpoint("removed", gen)) {
			return
		}
	}
	if err := rm.Remove(ctx, "removed"); err != nil {
		r.errorf("Remove: %v", err)
		return
	}
	if _, err := s.Load(ctx, "removed"); !errors.Is(err, checkpoint.ErrNotFound) {
		r.errorf("Load after Remove: got error %v, want checkpoint.ErrNotFound", err)
	}
	// A store may number generations on from before the Remove.
	if save(ctx, r, s, Checkpoint("removed", 1)) {
		if got := load(ctx, r, s, "removed"); got != nil {
			want := Checkpoint("removed", 1)
			want.Generation = got.Generation
			if diff := Diff(want, got); diff != "" {
				r.errorf("Load of a session saved again after Remove mismatch (-want +got):\n%s", diff)
			}
		}
	}
	l, ok := s.(locker)
	if !ok {
		return
	}
	_, release, ok := lockOf(ctx, r, l, "removed")
	if !ok {
		return
	}
	defer release()
	if err := rm.Remove(ctx, "removed"); err != nil {
		r.errorf("Remove of a locked session: %v", err)
	}
	if _, again, err := l.Lock(ctx, "removed"); !errors.Is(err, checkpoint.ErrLocked) {
		if err == nil && again != nil {
			again()
		}
		r.errorf("Lock after Remove of a locked session: got error %v, want checkpoint.ErrLocked (Remove must leave a held lock held)", err)
	}
}

func checkSessions(ctx context.Context, s Store, r *report) {
	l, ok := s.(lister)
	if !ok {
		r.skip = "store has no Sessions method"
		return
	}
	list := func(what string) []*checkpoint.Checkpoint {
		var out []*checkpoint.Checkpoint
		for c, err := range l.Sessions(ctx) {
			if err != nil {
				r.errorf("%s: Sessions yielded the error %v", what, err)
				continue
			}
			if c == nil {
				r.errorf("%s: Sessions yielded a nil checkpoint and no error", what)
				continue
			}
			out = append(out, c)
		}
		return out
	}
	if got := list("empty store"); len(got) != 0 {
		r.errorf("Sessions of an empty store listed %d sessions, want none", len(got))
	}
	for _, c := range []*checkpoint.Checkpoint{Checkpoint("b", 1), Checkpoint("a", 1), Checkpoint("a", 2), Checkpoint("c", 4)} {
		if !save(ctx, r, s, c) {
			return
		}
	}
	want := []string{"a", "b", "c"}
	if rm, ok := s.(remover); ok {
		if err := rm.Remove(ctx, "c"); err != nil {
			r.errorf("Remove: %v", err)
			return
		}
		want = want[:2]
	}
	got := list("sessions a, b")
	var names []string
	for _, c := range got {
		names = append(names, c.Session)
	}
	if !slices.Equal(names, want) {
		r.errorf("Sessions listed %q, want %q (each saved session, in the order of the names)", names, want)
	}
	for _, c := range got {
		if c.Engine != nil || c.State != nil {
			r.errorf("Sessions: session %q has %d bytes of Engine and %d of State, want nil: only the envelope is listed", c.Session, len(c.Engine), len(c.State))
		}
		loaded := load(ctx, r, s, c.Session)
		if loaded == nil {
			continue
		}
		loaded.Engine, loaded.State = nil, nil
		if diff := Diff(loaded, c); diff != "" {
			r.errorf("Sessions: session %q differs from its Load (-load +listed):\n%s", c.Session, diff)
		}
		scribble(c)
	}
	// What a listing returned is the caller's: changing it changes nothing.
	expect(ctx, r, s, Checkpoint("a", 2), "after changing what Sessions returned")
	for range l.Sessions(ctx) {
		break // stopping early must be harmless
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	n := 0
	for c, err := range l.Sessions(cancelled) {
		n++
		if c != nil || !errors.Is(err, context.Canceled) {
			r.errorf("Sessions under a cancelled context yielded (%v, %v), want (nil, an error matching context.Canceled)", c, err)
		}
	}
	if n != 1 {
		r.errorf("Sessions under a cancelled context yielded %d times, want once", n)
	}
}

// scribble changes every piece of memory a checkpoint shares through
// references: what a store must not alias.
func scribble(c *checkpoint.Checkpoint) {
	for _, b := range [][]byte{c.State, c.Engine} {
		for i := range b {
			b[i] ^= 0xff
		}
	}
	for i := range c.Skipped {
		c.Skipped[i]++
	}
	c.Status = "scribbled"
}

// pattern returns n bytes that are not all alike.
func pattern(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// streamSaver is implemented by stores that can take a checkpoint's state
// as a stream, as checkpoint.Dir and checkpoint.Memory do.
type streamSaver interface {
	SaveFrom(ctx context.Context, c *checkpoint.Checkpoint, state io.WriterTo) error
}

// writes is a state stream that writes its pieces in turn and then returns
// err.
type writes struct {
	pieces [][]byte
	err    error
}

func (s writes) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, p := range s.pieces {
		m, err := w.Write(p)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, s.err
}

// checkStream: a streamed save loads as a save of the same bytes would, for
// states of 0 bytes to 1 MiB written in pieces, the store keeping its own
// copy; a stream that fails, or that takes the checkpoint above 1 GiB, saves
// nothing and leaves the latest checkpoint as it was.
func checkStream(ctx context.Context, s Store, r *report) {
	ss, ok := s.(streamSaver)
	if !ok {
		r.skip = "the store has no SaveFrom"
		return
	}
	for i, size := range []int{0, 1, 1000, 1 << 20} {
		gen := uint64(i + 1)
		state := pattern(size)
		var pieces [][]byte
		for rest := state; len(rest) > 0; {
			n := min(len(rest), 1+len(pieces)*len(pieces)*997)
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		in := Checkpoint("stream", gen)
		in.State = nil
		if err := ss.SaveFrom(ctx, in, writes{pieces: pieces}); err != nil {
			r.errorf("SaveFrom(generation %d, a %d-byte state): %v", gen, size, err)
			return
		}
		clear(state)
		want := Checkpoint("stream", gen)
		want.State = pattern(size)
		expect(ctx, r, s, want, fmt.Sprintf("after a streamed save of %d bytes", size))
	}
	latest := Checkpoint("stream", 4)
	latest.State = pattern(1 << 20)
	errStream := errors.New("the stream failed")
	huge := make([]byte, 1<<30) // never written to, so never touched
	for _, tc := range []struct {
		name   string
		stream writes
		want   func(error) bool
	}{
		{"a stream that fails", writes{pieces: [][]byte{pattern(5000)}, err: errStream},
			func(err error) bool { return errors.Is(err, errStream) }},
		{"a stream above 1 GiB", writes{pieces: [][]byte{pattern(5000), huge}},
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "1 GiB") }},
	} {
		in := Checkpoint("stream", 5)
		in.State = nil
		if err := ss.SaveFrom(ctx, in, tc.stream); !tc.want(err) {
			r.errorf("SaveFrom of %s: got error %v", tc.name, err)
		}
		expect(ctx, r, s, latest, "after SaveFrom of "+tc.name)
	}
}
