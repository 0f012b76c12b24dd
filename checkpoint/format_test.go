package checkpoint_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
	"github.com/refine-go/refine/gap"
)

func TestMarshalRoundTrip(t *testing.T) {
	large := checkpointtest.Checkpoint("large", 9)
	large.State = make([]byte, 200<<10) // above the size written in one piece
	for i := range large.State {
		large.State[i] = byte(i * 7)
	}
	empty := &checkpoint.Checkpoint{Session: "empty"}
	emptyWant := &checkpoint.Checkpoint{Session: "empty", Version: checkpoint.Version}
	tests := []struct {
		name string
		in   *checkpoint.Checkpoint
		want *checkpoint.Checkpoint
	}{
		{"full", checkpointtest.Checkpoint("full", 7), checkpointtest.Checkpoint("full", 7)},
		{"large_state", large, large},
		{"zero_record_sets_version", empty, emptyWant},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := checkpoint.Marshal(tc.in)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			got, err := checkpoint.Unmarshal(data)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := checkpointtest.Diff(tc.want, got); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarshalDoesNotModify(t *testing.T) {
	c := checkpointtest.Checkpoint("s", 2)
	c.Version = 0
	want := c.Clone()
	if _, err := checkpoint.Marshal(c); err != nil {
		t.Fatal(err)
	}
	if diff := checkpointtest.Diff(want, c); diff != "" {
		t.Errorf("Marshal modified its argument (-want +got):\n%s", diff)
	}
}

func TestMarshalErrors(t *testing.T) {
	if _, err := checkpoint.Marshal(nil); !errors.Is(err, checkpoint.ErrNilCheckpoint) {
		t.Errorf("Marshal(nil): got %v, want ErrNilCheckpoint", err)
	}
	nan := checkpointtest.Checkpoint("nan", 1)
	nan.Gaps[0].Severity = zero() / zero()
	if _, err := checkpoint.Marshal(nan); err == nil {
		t.Errorf("Marshal of a NaN severity: got no error")
	}
}

func zero() float64 { return 0 }

func TestUnmarshalNoAlias(t *testing.T) {
	data, err := checkpoint.Marshal(checkpointtest.Checkpoint("s", 1))
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	clear(data)
	if diff := checkpointtest.Diff(checkpointtest.Checkpoint("s", 1), got); diff != "" {
		t.Errorf("result shares memory with the input (-want +got):\n%s", diff)
	}
}

// TestUnmarshalTruncated checks every prefix of a record: each is damage,
// never a panic nor a success.
func TestUnmarshalTruncated(t *testing.T) {
	c := &checkpoint.Checkpoint{Session: "t", Generation: 3, Status: "running", State: []byte("state")}
	data, err := checkpoint.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(data) {
		_, err := checkpoint.Unmarshal(data[:n])
		var ce *checkpoint.CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("Unmarshal of the first %d of %d bytes: got error %v, want a *CorruptError", n, len(data), err)
		}
	}
}

// TestUnmarshalFlippedByte flips one bit of each byte in turn: the checksum
// catches every one, the version field included.
func TestUnmarshalFlippedByte(t *testing.T) {
	data, err := checkpoint.Marshal(checkpointtest.Checkpoint("flip", 4))
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		for _, bit := range []byte{0x01, 0x80} {
			damaged := append([]byte(nil), data...)
			damaged[i] ^= bit
			if _, err := checkpoint.Unmarshal(damaged); !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("byte %d ^ %#x of %d: got error %v, want ErrCorrupt", i, bit, len(data), err)
			}
		}
	}
}

func TestUnmarshalErrors(t *testing.T) {
	good, err := checkpoint.Marshal(checkpointtest.Checkpoint("e", 1))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string // the error's text
	}{
		{"nil", nil, "checkpoint: corrupt: truncated"},
		{"bad_magic", append([]byte("JSON"), good[4:]...), "checkpoint: corrupt: bad magic number, not a checkpoint"},
		{"trailing_data", append(append([]byte(nil), good...), 0), "checkpoint: corrupt: trailing data after the checksum"},
		{"huge_state_length", withUint64(good, 12, 1<<63), "checkpoint: corrupt: truncated"},
		{"huge_record_length", withUint32(good, 8, 1<<32-1), "checkpoint: corrupt: truncated"},
		{"checksum", withUint32(good, len(good)-4, 0), "checkpoint: corrupt: checksum mismatch"},
		{"json_not_object", resealed([]byte("RFCK\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00[]")), "checkpoint: corrupt: unreadable record: json: cannot unmarshal array into Go value of type checkpoint.Checkpoint"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkpoint.Unmarshal(tc.data)
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("got error %v, want ErrCorrupt", err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error text mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnmarshalVersion(t *testing.T) {
	good, err := checkpoint.Marshal(checkpointtest.Checkpoint("v", 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []uint32{0, 2, 1 << 20} {
		data := resealed(withUint32(good[:len(good)-4], 4, v))
		_, err := checkpoint.Unmarshal(data)
		var ve *checkpoint.VersionError
		if !errors.As(err, &ve) || !errors.Is(err, checkpoint.ErrVersion) {
			t.Fatalf("version %d: got error %v, want a *VersionError", v, err)
		}
		if errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("version %d: a *VersionError matches ErrCorrupt", v)
		}
		if ve.Version != int(v) {
			t.Errorf("VersionError.Version = %d, want %d", ve.Version, v)
		}
	}
	if diff := cmp.Diff("checkpoint: unsupported format version 2 (this package reads version 1)",
		(&checkpoint.VersionError{Version: 2}).Error()); diff != "" {
		t.Errorf("VersionError text mismatch (-want +got):\n%s", diff)
	}
}

func TestErrorTexts(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&checkpoint.CorruptError{}, "checkpoint: corrupt"},
		{&checkpoint.CorruptError{Path: "d/s.ckpt", Generation: 7, Err: errors.New("checksum mismatch")}, "checkpoint: corrupt generation 7 (d/s.ckpt): checksum mismatch"},
		{&checkpoint.LockedError{Session: "build", Holder: "pid 42"}, `checkpoint: session "build" is locked by pid 42`},
		{&checkpoint.LockedError{Session: "build"}, `checkpoint: session "build" is locked by another run`},
		{&checkpoint.SessionError{Session: "a/b", Reason: "contains a path separator"}, `checkpoint: invalid session name "a/b": contains a path separator`},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
			t.Errorf("%T text mismatch (-want +got):\n%s", tc.err, diff)
		}
	}
	if !errors.Is(&checkpoint.LockedError{}, checkpoint.ErrLocked) || errors.Is(&checkpoint.LockedError{}, checkpoint.ErrCorrupt) {
		t.Error("LockedError does not match ErrLocked alone")
	}
}

func TestValidateSession(t *testing.T) {
	tests := []struct {
		session string
		reason  string // "" when valid
	}{
		{"build", ""},
		{"auth-research 2026.02", ""},
		{"日本語", ""},
		{"", "empty"},
		{string(make([]byte, 201)), "longer than 200 bytes"},
		{"a/b", "contains a path separator"},
		{`a\b`, "contains a path separator"},
		{"a..b", `contains ".."`},
		{"..", `contains ".."`},
		{".hidden", "starts with a dot"},
		{"tab\there", "contains the unprintable character U+0009"},
		{"nul\x00", "contains the unprintable character U+0000"},
		{"bad\xffutf8", "not valid UTF-8"},
	}
	for _, tc := range tests {
		err := checkpoint.ValidateSession(tc.session)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("ValidateSession(%q) = %v, want nil", tc.session, err)
			}
			continue
		}
		var se *checkpoint.SessionError
		if !errors.As(err, &se) || !errors.Is(err, checkpoint.ErrInvalidSession) {
			t.Errorf("ValidateSession(%q) = %v, want a *SessionError", tc.session, err)
			continue
		}
		if diff := cmp.Diff(tc.reason, se.Reason); diff != "" {
			t.Errorf("ValidateSession(%q) reason mismatch (-want +got):\n%s", tc.session, diff)
		}
	}
}

func TestClone(t *testing.T) {
	if (*checkpoint.Checkpoint)(nil).Clone() != nil {
		t.Error("Clone of nil is not nil")
	}
	orig := checkpointtest.Checkpoint("clone", 5)
	orig.Notes = []string{"a note"}
	orig.History.Current = gap.Assessment{
		Missing:  []string{"a.go"},
		Findings: []gap.Finding{{ID: "f1", Citations: []string{"a.go:1"}}},
		Scores:   map[string]float64{"tests": 0.5},
	}
	orig.History.Gaps = []gap.Gap{{Kind: gap.Coverage, Focus: []string{"x"}}}
	want := checkpointtest.Checkpoint("clone", 5)
	want.Notes = []string{"a note"}
	want.History.Current = gap.Assessment{
		Missing:  []string{"a.go"},
		Findings: []gap.Finding{{ID: "f1", Citations: []string{"a.go:1"}}},
		Scores:   map[string]float64{"tests": 0.5},
	}
	want.History.Gaps = []gap.Gap{{Kind: gap.Coverage, Focus: []string{"x"}}}

	c := orig.Clone()
	if diff := checkpointtest.Diff(want, c); diff != "" {
		t.Fatalf("Clone mismatch (-want +got):\n%s", diff)
	}
	// Changing every reference of the clone leaves the original alone.
	c.State[0] ^= 0xff
	c.Engine[0] ^= 0xff
	c.Durations[0]++
	c.Gaps[0].Focus[0] = "changed"
	c.Notes[0] = "changed"
	c.History.Iteration++
	c.History.Recent[0].Scores["tests"] = -1
	c.History.WorkRemaining[0] = "changed"
	c.History.Current.Missing[0] = "changed"
	c.History.Current.Findings[0].Citations[0] = "changed"
	c.History.Current.Scores["tests"] = -1
	c.History.Gaps[0].Focus[0] = "changed"
	if diff := checkpointtest.Diff(want, orig); diff != "" {
		t.Errorf("changing the clone changed the original (-want +got):\n%s", diff)
	}
}

func withUint32(data []byte, off int, v uint32) []byte {
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint32(out[off:], v)
	return out
}

func withUint64(data []byte, off int, v uint64) []byte {
	out := append([]byte(nil), data...)
	binary.LittleEndian.PutUint64(out[off:], v)
	return out
}

// resealed appends a valid checksum to a record without one.
func resealed(body []byte) []byte {
	sum := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), sum)
}

func FuzzUnmarshal(f *testing.F) {
	for _, c := range []*checkpoint.Checkpoint{
		checkpointtest.Checkpoint("fuzz", 3),
		{Session: "empty"},
		{Session: "state", State: []byte("some state")},
	} {
		data, err := checkpoint.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(resealed(withUint32(data[:len(data)-4], 4, 2)))
	}
	f.Add([]byte{})
	f.Add([]byte("RFCK"))
	f.Add(resealed([]byte("RFCK\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00null")))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkUnmarshal(t, data)
		// Most mutations fail the checksum; a resealed copy also reaches
		// the header and record checks behind it.
		if len(data) >= 4 {
			checkUnmarshal(t, resealed(data[:len(data)-4]))
		}
	})
}

// checkUnmarshal checks the properties of Unmarshal that hold for any input.
func checkUnmarshal(t *testing.T, data []byte) {
	t.Helper()
	c, err := checkpoint.Unmarshal(data)
	if err != nil {
		if !errors.Is(err, checkpoint.ErrCorrupt) && !errors.Is(err, checkpoint.ErrVersion) {
			t.Fatalf("error matches neither ErrCorrupt nor ErrVersion: %v", err)
		}
		return
	}
	if c.Version != checkpoint.Version {
		t.Fatalf("decoded Version %d, want %d", c.Version, checkpoint.Version)
	}
	// What decodes encodes again, to something that decodes the same.
	again, err := checkpoint.Marshal(c)
	if err != nil {
		t.Fatalf("Marshal of a decoded checkpoint: %v", err)
	}
	c2, err := checkpoint.Unmarshal(again)
	if err != nil {
		t.Fatalf("Unmarshal of a re-encoded checkpoint: %v", err)
	}
	if diff := checkpointtest.Diff(c, c2); diff != "" {
		t.Fatalf("re-encoding changed the checkpoint (-first +second):\n%s", diff)
	}
}
