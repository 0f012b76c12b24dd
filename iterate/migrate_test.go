package iterate_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/iterate"
)

// draftV1 is a host's state before a deploy: a title; draftV3 after two:
// a title and words, renamed.
type draftV1 struct {
	Title string `json:"title"`
}

type draftV3 struct {
	Heading string `json:"heading"`
	Words   int    `json:"words"`
}

// v1to2 renames title to heading; v2to3 adds a word count.
var (
	v1to2 = iterate.Migration{From: 1, Migrate: func(_ context.Context, b []byte) ([]byte, error) {
		return bytes.Replace(b, []byte(`"title"`), []byte(`"heading"`), 1), nil
	}}
	v2to3 = iterate.Migration{From: 2, Migrate: func(_ context.Context, b []byte) ([]byte, error) {
		return append(bytes.TrimSuffix(bytes.TrimSpace(b), []byte("}")), []byte(`,"words":0}`)...), nil
	}}
)

// interruptedV1 leaves an interrupted session saved by the version 1 host.
func interruptedV1(t *testing.T, store iterate.Checkpointer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	step := func(_ context.Context, d draftV1, _ iterate.Round) (draftV1, error) {
		cancel()
		return draftV1{Title: d.Title + "!"}, nil
	}
	_, err := iterate.New(iterate.Func(step), iterate.WithCheckpointer(store), iterate.WithMaxIterations(3),
		iterate.WithStateVersion(1)).Run(ctx, draftV1{Title: "refine"})
	if !errors.Is(err, iterate.ErrInterrupted) {
		t.Fatal(err)
	}
}

// TestStateMigratesStepByStep guards "resuming a checkpoint saved under an
// older state version migrates it step by step and saves it under the new
// version": a session saved by a version 1 host is resumed by a version 3
// host, its state migrated through 2, and later saves are version 3 (a
// version 3 host resumes them without migrating). Mutations caught: the
// state decoded without migrating (Heading empty), a step skipped, the
// saves keeping version 1 (migrated again).
func TestStateMigratesStepByStep(t *testing.T) {
	store := &checkpoint.Memory{}
	interruptedV1(t, store)
	calls := 0
	count := func(m iterate.Migration) iterate.Migration {
		f := m.Migrate
		m.Migrate = func(ctx context.Context, b []byte) ([]byte, error) { calls++; return f(ctx, b) }
		return m
	}
	var seen draftV3
	step := func(_ context.Context, d draftV3, r iterate.Round) (draftV3, error) {
		seen = d
		d.Words += 100
		return d, nil
	}
	opts := []iterate.Option{iterate.WithCheckpointer(store), iterate.WithMaxIterations(3), iterate.WithStateVersion(3, count(v2to3), count(v1to2))}
	res, err := iterate.New(iterate.Func(step), opts...).Resume(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if seen.Heading != "refine!" || res.State != (draftV3{Heading: "refine!", Words: 200}) || calls != 2 {
		t.Fatalf("resumed with %+v, ended %+v after %d migrations; want heading refine!, 200 words, 2 steps", seen, res.State, calls)
	}
	if _, err := iterate.New(iterate.Func(step), opts...).Resume(context.Background()); err != nil || calls != 2 {
		t.Errorf("a second resume: %v after %d migrations, want none more", err, calls)
	}
}

// TestStateVersionRefused: a checkpoint of a newer version than the host
// knows, or one no migration leads from, or whose migration fails, is
// refused with a *StateVersionError naming the versions, and the
// checkpoint is left untouched. (Mutation caught: decoding a newer state
// as if it were the host's.)
func TestStateVersionRefused(t *testing.T) {
	store := &checkpoint.Memory{}
	interruptedV1(t, store)
	before, _ := store.Load(context.Background(), iterate.DefaultSession)
	boom := errors.New("bad shape")
	step := func(_ context.Context, d draftV3, _ iterate.Round) (draftV3, error) { return d, nil }
	for _, tc := range []struct {
		name    string
		version iterate.Option
		at      int
		err     error
	}{
		{"older host", iterate.WithStateVersion(0), 1, nil},
		{"missing step", iterate.WithStateVersion(3, v2to3), 1, nil},
		{"failing step", iterate.WithStateVersion(3, v1to2, iterate.Migration{From: 2,
			Migrate: func(context.Context, []byte) ([]byte, error) { return nil, boom }}), 2, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := iterate.New(iterate.Func(step), iterate.WithCheckpointer(store), iterate.WithMaxIterations(3), tc.version).
				Resume(context.Background())
			var sv *iterate.StateVersionError
			if !errors.As(err, &sv) || !errors.Is(err, iterate.ErrStateVersion) || sv.Saved != 1 || sv.At != tc.at ||
				(tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("err %v, want a *StateVersionError from version 1 at %d", err, tc.at)
			}
			after, _ := store.Load(context.Background(), iterate.DefaultSession)
			if after.Generation != before.Generation || !bytes.Equal(after.State, before.State) {
				t.Errorf("the checkpoint changed: generation %d → %d", before.Generation, after.Generation)
			}
		})
	}
	var ce *iterate.ConfigError
	_, err := iterate.New(iterate.Func(step), iterate.WithCheckpointer(store), iterate.WithStateVersion(2, v1to2, v1to2)).Resume(context.Background())
	if !errors.As(err, &ce) {
		t.Errorf("two steps from version 1: %v, want a *ConfigError", err)
	}
}
