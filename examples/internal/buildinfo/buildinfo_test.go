package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{
			name: "release_with_revision",
			bi: debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "github.com/refine-go/refine", Version: "v1.2.0"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd4567890fedcba"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}},
			want: "prog github.com/refine-go/refine v1.2.0 (rev 0123abcd4567, 2026-01-02T03:04:05Z) go1.25.1",
		},
		{
			name: "dirty_checkout",
			bi: debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "github.com/refine-go/refine", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			want: "prog github.com/refine-go/refine (devel) (rev abc, +dirty) go1.25.1",
		},
		{
			name: "nothing_recorded",
			bi:   debug.BuildInfo{},
			want: "prog (devel)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := format("prog", &tt.bi); got != tt.want {
				t.Errorf("format = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVersionOfThisBinary(t *testing.T) {
	if got := Version("prog"); !strings.HasPrefix(got, "prog ") {
		t.Errorf("Version = %q, want it to start with the name", got)
	}
}
