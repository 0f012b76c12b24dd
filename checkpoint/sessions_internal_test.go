package checkpoint

import "testing"

// TestEnvelopeOfVanishedSession: a session whose generation files are all
// gone by the time they are read (removed by another process after the
// listing), with no quarantined file, is left out of Sessions: its
// envelope is nil, without an error. The race is set up by listing a
// generation that does not exist.
func TestEnvelopeOfVanishedSession(t *testing.T) {
	d := NewDir(t.TempDir())
	for _, gens := range [][]uint64{{1}, {1, 2, 3}} {
		if c, err := d.envelope(&listed{session: "s", gens: gens}); c != nil || err != nil {
			t.Errorf("envelope of generations %v, all gone: %v, %v; want nil, nil", gens, c, err)
		}
	}
}
