package checkpoint_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// TestMarshalLayoutVersion3 pins the fixed fields of a version-3 record:
// a checkpoint with a best generation or an origin is written in version
// 3, one without them in version 2 (TestMarshalLayout).
func TestMarshalLayoutVersion3(t *testing.T) {
	c := &checkpoint.Checkpoint{Session: "s", Generation: 7, Token: 3, Iteration: 2, Time: time.Unix(100, 5),
		BestGeneration: 5, Origin: checkpoint.Origin{Session: "o", Generation: 9}, Engine: []byte("E"), State: []byte("ST")}
	data, err := checkpoint.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	recLen := 52 + 7*4 + len("s") + len("o") + len("E")
	got := []uint64{
		uint64(le.Uint32(data[4:])), uint64(le.Uint32(data[8:])), le.Uint64(data[12:]),
		le.Uint64(data[20:]), le.Uint64(data[28:]), le.Uint64(data[36:]), le.Uint64(data[44:]), uint64(le.Uint32(data[52:])),
		le.Uint64(data[56:]), le.Uint64(data[64:]),
		uint64(len(data)),
	}
	want := []uint64{3, uint64(recLen), 2, 7, 3, 2, 100, 5, 5, 9, uint64(20 + recLen + 2 + 4)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layout mismatch (-want +got):\n%s", diff)
	}
}

// TestVersion3RoundTrip: the fields of version 3 round-trip, each alone
// and together, through Marshal and through both stores; a version-2 file
// still loads.
func TestVersion3RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		best   uint64
		origin checkpoint.Origin
	}{
		{"none", 0, checkpoint.Origin{}},
		{"best", 4, checkpoint.Origin{}},
		{"origin_session", 0, checkpoint.Origin{Session: "parent"}},
		{"origin_generation", 0, checkpoint.Origin{Generation: 3}},
		{"all", 1<<64 - 1, checkpoint.Origin{Session: "pärent", Generation: 1<<64 - 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkpointtest.Checkpoint("v3", 2)
			c.BestGeneration, c.Origin = tc.best, tc.origin
			data, err := checkpoint.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			wantVersion := uint32(3)
			if tc.best == 0 && tc.origin == (checkpoint.Origin{}) {
				wantVersion = 2
			}
			if v := binary.LittleEndian.Uint32(data[4:]); v != wantVersion {
				t.Errorf("written in version %d, want %d", v, wantVersion)
			}
			checkUnmarshal(t, data)
			got, err := checkpoint.Unmarshal(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := checkpointtest.Diff(c, got); diff != "" {
				t.Errorf("Unmarshal mismatch (-want +got):\n%s", diff)
			}
			for _, s := range []interface {
				checkpointtest.Store
			}{new(checkpoint.Memory), checkpoint.NewDir(t.TempDir())} {
				if err := s.Save(ctx, c); err != nil {
					t.Fatal(err)
				}
				got, err := s.Load(ctx, c.Session)
				if err != nil {
					t.Fatal(err)
				}
				if diff := checkpointtest.Diff(c, got); diff != "" {
					t.Errorf("%T: Load mismatch (-want +got):\n%s", s, diff)
				}
			}
			d := checkpoint.NewDir(t.TempDir())
			if err := d.Save(ctx, c); err != nil {
				t.Fatal(err)
			}
			for l, err := range d.Sessions(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if l.BestGeneration != tc.best || l.Origin != tc.origin {
					t.Errorf("Sessions: best %d origin %+v, want %d %+v", l.BestGeneration, l.Origin, tc.best, tc.origin)
				}
			}
		})
	}
}

// TestVersion3WithoutItsFields: a version-3 record without a best
// generation or an origin is malformed (it is written in version 2), so
// that every checkpoint has one encoding.
func TestVersion3WithoutItsFields(t *testing.T) {
	c := checkpointtest.Checkpoint("v3", 2)
	c.BestGeneration = 1
	data, err := checkpoint.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	body := withUint64(data[:len(data)-4], 20+36, 0)
	_, err = checkpoint.Unmarshal(resealed(body))
	if !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Errorf("version 3 without its fields: got %v, want ErrCorrupt", err)
	}
}
