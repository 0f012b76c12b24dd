package main

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addFixtures adds every testdata file with one of the extensions to the
// seed corpus of f.
func addFixtures(f *testing.F, exts ...string) {
	f.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		for _, ext := range exts {
			if strings.HasSuffix(e.Name(), ext) {
				data, err := os.ReadFile(filepath.Join("testdata", e.Name()))
				if err != nil {
					f.Fatal(err)
				}
				f.Add(data)
			}
		}
	}
}

// FuzzParsePlan checks that ParsePlan never panics, that a parsed plan
// renders back to its input byte for byte, that an invalid plan is an
// ErrInvalidPlan, and that waves, recovery and checking tasks off keep the
// plan parseable with the same phases.
func FuzzParsePlan(f *testing.F) {
	addFixtures(f, ".md", ".lean")
	for _, s := range []string{
		"",
		"### Phase 1: A\n- [ ] a\n",
		"### Phase Two: Deploy\n- [ ] a\n",
		"### Phase 1.5: x\n- [x] y\n### Phase 1: z\n- [ ] w\n",
		"### Phase -1:\n",
		"- **Status**: [IN PROGRESS]\n### Phase 2 [COMPLETE]\nDepends on: Phase 1\n",
		"```\n### Phase 3: fenced\n```\n### Phase 3: C\n  - [ ] nested\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fileMode := range []bool{false, true} {
			p, err := ParsePlan("plan.md", data, fileMode)
			if err != nil {
				if !errors.Is(err, ErrInvalidPlan) {
					t.Fatalf("fileMode %t: error %v is not ErrInvalidPlan", fileMode, err)
				}
				continue
			}
			if !bytes.Equal(p.Bytes(), data) {
				t.Fatalf("fileMode %t: Bytes() = %q, want the input %q", fileMode, p.Bytes(), data)
			}
			if fileMode {
				for _, it := range p.OpenItems() {
					p.Check(it)
				}
				continue
			}
			if _, err := p.Waves(); err != nil && !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("Waves: %v", err)
			}
			for _, ph := range p.Phases {
				if len(ph.Tasks) > 0 {
					p.Check(ph.Tasks[0])
				}
			}
			p.Recover()
			again := p.Recover()
			if len(again.Recovered) != 0 || again.StatusChanged {
				t.Fatalf("Recover is not idempotent: %+v", again)
			}
			q, err := ParsePlan("plan.md", p.Bytes(), false)
			if err != nil {
				t.Fatalf("an edited plan no longer parses: %v\n%s", err, p.Bytes())
			}
			if len(q.Phases) != len(p.Phases) {
				t.Fatalf("edited plan has %d phases, want %d", len(q.Phases), len(p.Phases))
			}
		}
	})
}

// FuzzParseReport checks that an implementer's output never panics the
// report parser and that an accepted report has no negative count.
func FuzzParseReport(f *testing.F) {
	for _, s := range []string{
		"",
		"working\n{\"completed\":[1,2],\"external_calls\":1,\"local_calls\":1,\"mark_complete\":true}\n",
		"{\"completed\":[1]}\n{\"completed\":[2],\"tokens\":5}",
		"{\"bogus\":1}",
		"{\"external_calls\":-1}",
		"{not json",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		rep, err := parseReport(out)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v is not ErrProtocol", err)
			}
			return
		}
		if rep.ExternalCalls < 0 || rep.LocalCalls < 0 || rep.Tokens < 0 {
			t.Fatalf("negative count accepted: %+v", rep)
		}
	})
}

// FuzzParsePhaseRef checks that a phase reference (--sim-fail) that
// parses names a phase whose own spellings parse back to it.
func FuzzParsePhaseRef(f *testing.F) {
	for _, s := range []string{"Phase 3", "Phase_3", "phase3", "3", "Phase x", "", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parsePhaseRef(s)
		if !ok {
			return
		}
		for _, spelling := range []string{phaseName(n), phaseKey(n)} {
			if m, ok := parsePhaseRef(spelling); !ok || m != n {
				t.Fatalf("parsePhaseRef(%q) = %d, %t; want %d (from %q)", spelling, m, ok, n, s)
			}
		}
	})
}

// FuzzSavedSettings checks the settings file that --resume reads: any
// content either fails to load, is refused by restore or validate with an
// error, or yields options that validate again unchanged.
func FuzzSavedSettings(f *testing.F) {
	for _, s := range []string{
		`{"implementer-cmd":"bash impl.sh","simulate":"false","parallel":"3","context-threshold":"0.9","phase-timeout":"5s"}`,
		`{"simulate":"true","sim-fail":"Phase 2","max-iterations":"-1"}`,
		`{"parallel":"x","context-window":"1e99"}`,
		`{"context-threshold":"NaN"}`,
		`[]`,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "s.settings.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		saved, err := loadSettings(path)
		if err != nil {
			return
		}
		o, err := parse([]string{"--resume", "plan.md"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if saved.restore(o) != nil || validate(o) != nil {
			return
		}
		before := settingsOf(o.flags)
		if err := validate(o); err != nil {
			t.Fatalf("validating valid options again: %v", err)
		}
		if after := settingsOf(o.flags); !maps.Equal(before, after) {
			t.Fatalf("validate is not idempotent: %v, then %v", before, after)
		}
	})
}
