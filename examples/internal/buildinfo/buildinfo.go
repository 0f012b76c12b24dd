// Package buildinfo describes the build of an example program for its
// --version flag: the module version and the version control revision the
// go command recorded in the binary (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version returns the version line of the program: its name, the main
// module's version, the VCS revision (with "-modified" when the working
// tree had changes) and time when recorded, and the Go version, e.g.
//
//	agentloop v0.3.0 (rev 1a2b3c4d5e6f 2026-11-23T19:00:00Z, go1.25.0)
//	agentloop (devel) (rev 1a2b3c4d5e6f-modified 2026-11-23T19:00:00Z, go1.25.0)
//
// Without build information (a test binary, say) it says "unknown".
func Version(program string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return program + " unknown (no build information, " + runtime.Version() + ")"
	}
	return program + " " + describe(info)
}

// describe formats the version, revision and Go version of info.
func describe(info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var details []string
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if settings["vcs.modified"] == "true" {
			rev += "-modified"
		}
		d := "rev " + rev
		if t := settings["vcs.time"]; t != "" {
			d += " " + t
		}
		details = append(details, d)
	}
	goVersion := info.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	details = append(details, goVersion)
	return version + " (" + strings.Join(details, ", ") + ")"
}
