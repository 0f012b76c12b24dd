package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{
			name: "release",
			info: debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.time", Value: "2026-11-23T19:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			want: "v0.3.0 (rev 1a2b3c4d5e6f 2026-11-23T19:00:00Z, go1.25.0)",
		},
		{
			name: "modified_checkout",
			info: debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "1a2b3c4"}, {Key: "vcs.modified", Value: "true"}}},
			want: "(devel) (rev 1a2b3c4-modified, go1.25.0)",
		},
		{
			name: "no_vcs",
			info: debug.BuildInfo{GoVersion: "go1.25.0"},
			want: "(devel) (go1.25.0)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, describe(&tt.info)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionNamesTheProgram(t *testing.T) {
	if got := Version("fixloop"); !strings.HasPrefix(got, "fixloop ") || !strings.Contains(got, "go1.") {
		t.Errorf("Version = %q, want the program's name and a Go version", got)
	}
}
