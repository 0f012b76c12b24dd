// Package buildinfo describes the build of an example program for its
// --version flag: the module version and the VCS revision, from
// runtime/debug.ReadBuildInfo.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Version returns the version line of the program name: its module path
// and version ("(devel)" when built from a checkout), then the VCS revision
// with its time and "+dirty" when the working copy had changes, when the
// go command recorded them (go build in a checkout; not go run, not go
// test), then the Go version, e.g.
//
//	planrunner github.com/refine-go/refine v1.2.0 (rev 0123abcd4567, 2026-01-02T03:04:05Z) go1.25.1
//
// Without build information it returns name and "unknown version".
func Version(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return name + " unknown version"
	}
	return format(name, bi)
}

// format renders the version line of bi.
func format(name string, bi *debug.BuildInfo) string {
	var b strings.Builder
	b.WriteString(name)
	if bi.Main.Path != "" {
		b.WriteString(" " + bi.Main.Path)
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	b.WriteString(" " + version)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		b.WriteString(" (rev " + rev)
		if t := settings["vcs.time"]; t != "" {
			b.WriteString(", " + t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(", +dirty")
		}
		b.WriteString(")")
	}
	if bi.GoVersion != "" {
		b.WriteString(" " + bi.GoVersion)
	}
	return b.String()
}
