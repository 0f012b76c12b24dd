package checkpoint_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/checkpoint/checkpointtest"
)

// TestUnmarshalBoundaries: each size and range check of the decoder, on
// both sides of its bound, says what it found (the reason is part of the
// *CorruptError). A check whose bound moved by one (a mutation the other
// tests did not see: they only asked for a *CorruptError) fails here.
func TestUnmarshalBoundaries(t *testing.T) {
	good, err := checkpoint.Marshal(checkpointtest.Checkpoint("s", 3))
	if err != nil {
		t.Fatal(err)
	}
	body := good[:len(good)-4] // without its checksum
	const maxEncoded = 1 << 30
	for _, tc := range []struct {
		name string
		data []byte
		want string // in the error; "" for none
	}{
		{"3_bytes", []byte("RFC"), "truncated"},
		{"4_bytes_not_magic", []byte("XXXX"), "bad magic number"},
		{"header_without_checksum", header(checkpoint.Version, 0, 0), "truncated"},
		// Shorter than a header and a checksum, cut to their length (no
		// capacity beyond it): the lengths are not read.
		{"magic_and_12_bytes", exactly(header(checkpoint.Version, 0, 0)[:16]), "truncated"},
		{"header_and_3_bytes", exactly(append(header(checkpoint.Version, 0, 0), 0, 0, 0)), "truncated"},
		{"header_and_checksum_only", resealed(header(checkpoint.Version, 0, 0)), "shorter than its fixed fields"},
		{"record_of_fixed_fields_only", resealed(append(header(2, 36, 0), make([]byte, 36)...)), "a length beyond its end"},
		{"record_one_short_of_fixed_fields", resealed(append(header(2, 35, 0), make([]byte, 35)...)), "shorter than its fixed fields"},
		{"v3_record_of_fixed_fields_only", resealed(append(header(checkpoint.Version, 52, 0), make([]byte, 52)...)), "a length beyond its end"},
		{"v3_record_one_short_of_fixed_fields", resealed(append(header(checkpoint.Version, 51, 0), make([]byte, 51)...)), "shorter than its fixed fields"},
		{"lengths_total_1GiB", append(header(checkpoint.Version, 0, maxEncoded-24), 0, 0, 0, 0), "truncated"},
		{"lengths_total_1GiB_and_1", append(header(checkpoint.Version, 0, maxEncoded-23), 0, 0, 0, 0), "beyond the 1 GiB limit"},
		{"state_length_wraps_the_total", append(header(checkpoint.Version, 0, math.MaxUint64-23), 0, 0, 0, 0), "beyond the 1 GiB limit"},
		{"one_byte_more", append(append([]byte(nil), good...), 0), "trailing data"},
		{"one_byte_less", good[:len(good)-1], "truncated"},
		{"nanoseconds_999999999", resealed(withUint32(body, 20+32, 999999999)), ""},
		{"nanoseconds_1e9", resealed(withUint32(body, 20+32, 1e9)), "nanoseconds out of range"},
		{"intact", good, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkpoint.Unmarshal(tc.data)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Unmarshal: %v, want no error", err)
			case tc.want != "" && (!errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Unmarshal: %v, want a *CorruptError saying %q", err, tc.want)
			}
		})
	}
}

// exactly returns a copy of b with no capacity beyond its length.
func exactly(b []byte) []byte { return append([]byte(nil), b...)[:len(b):len(b)] }
