package iterate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Migration turns the encoded state (and each journaled task's part, and
// the kept best state: every value of S a checkpoint holds) of version From
// into version From+1. It receives the bytes the loop's codec wrote and
// returns bytes of the next version for the same codec.
type Migration struct {
	From    int
	Migrate func(ctx context.Context, data []byte) ([]byte, error)
}

// WithStateVersion declares the version of the state type S this host
// writes (the checkpoints of a host that declares none are version 0), and
// the migrations from older versions, one step each. Resuming a checkpoint
// saved under an older version migrates its states step by step before
// decoding them, and the run's saves write them under the new version; a
// checkpoint of a newer version than the host knows is refused with a
// *StateVersionError naming both; a missing step or a failed migration is
// an error too, and leaves the checkpoint untouched.
//
// The version is not one of the settings a resume compares: a deploy that
// changes the state's shape and declares its migration resumes every
// session. A version below 0, two steps from one version, or a step from a
// version not below version, is a *ConfigError.
func WithStateVersion(version int, migrations ...Migration) Option {
	return optionFunc(func(c *config) {
		if version < 0 {
			c.invalid("WithStateVersion", "negative version "+strconv.Itoa(version))
			return
		}
		steps := make(map[int]Migration, len(migrations))
		for _, m := range migrations {
			switch {
			case m.Migrate == nil:
				c.invalid("WithStateVersion", "nil migration from version "+strconv.Itoa(m.From))
			case m.From < 0 || m.From >= version:
				c.invalid("WithStateVersion", "migration from version "+strconv.Itoa(m.From)+" is not below version "+strconv.Itoa(version))
			default:
				if _, dup := steps[m.From]; dup {
					c.invalid("WithStateVersion", "two migrations from version "+strconv.Itoa(m.From))
				}
				steps[m.From] = m
			}
		}
		c.stateVersion, c.migrations = version, steps
	})
}

// ErrStateVersion is matched by a *StateVersionError.
var ErrStateVersion = errors.New("iterate: state version")

// StateVersionError is returned by Resume when a session's state cannot be
// brought to the host's version: it is newer than the host knows, no
// migration leads from it, or a migration failed (Err). The checkpoint is
// left as it was.
type StateVersionError struct {
	Session string
	// Saved is the version the checkpoint holds, Known the host's
	// (WithStateVersion), and At the version a migration step failed from
	// (with Err), or had no step.
	Saved, Known, At int
	Err              error
}

func (e *StateVersionError) Error() string {
	msg := fmt.Sprintf("iterate: session %q: state version %d, this host knows version %d", e.Session, e.Saved, e.Known)
	switch {
	case e.Saved > e.Known:
		return msg + ": the session was saved by a newer host"
	case e.Err != nil:
		return msg + ": migrating from version " + strconv.Itoa(e.At) + ": " + e.Err.Error()
	}
	return msg + ": no migration from version " + strconv.Itoa(e.At)
}

// Is reports whether target is ErrStateVersion.
func (e *StateVersionError) Is(target error) bool { return target == ErrStateVersion }

// Unwrap returns the migration's error, if any.
func (e *StateVersionError) Unwrap() error { return e.Err }

// migrate brings data, a value of S encoded under the state version
// saved, to the host's version.
func (r *run[S]) migrate(ctx context.Context, saved int, data []byte) ([]byte, error) {
	known := r.cfg.stateVersion
	if saved > known {
		return nil, &StateVersionError{Session: r.cfg.session, Saved: saved, Known: known, At: saved}
	}
	for v := saved; v < known; v++ {
		m, ok := r.cfg.migrations[v]
		if !ok {
			return nil, &StateVersionError{Session: r.cfg.session, Saved: saved, Known: known, At: v}
		}
		next, err := func() (b []byte, err error) {
			defer recoverInto(&err, "migrate")
			return m.Migrate(ctx, data)
		}()
		if err != nil {
			return nil, &StateVersionError{Session: r.cfg.session, Saved: saved, Known: known, At: v, Err: err}
		}
		data = next
	}
	return data, nil
}

// migrateAll migrates every value of S the restored record holds (the
// state c.State is migrated by the caller): the journal's parts and the
// best state.
func (r *run[S]) migrateRecord(ctx context.Context, saved int) error {
	for i := range r.data.Journal {
		e := &r.data.Journal[i]
		if e.Part == nil {
			continue
		}
		p, err := r.migrate(ctx, saved, e.Part)
		if err != nil {
			return err
		}
		e.Part = p
	}
	if b := r.data.Best; b != nil && b.State != nil {
		s, err := r.migrate(ctx, saved, b.State)
		if err != nil {
			return err
		}
		nb := *b // a new record: the encoder caches the best by identity
		nb.State = s
		r.data.Best = &nb
	}
	return nil
}
