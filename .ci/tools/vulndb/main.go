// Command vulndb builds a Go vulnerability database, in the layout that
// govulncheck -db file:///DIR reads, from the OSV entries of the
// golang.org/x/vulndb module (data/osv/GO-*.json):
//
//	DIR/index/db.json       {"modified": newest entry's time}
//	DIR/index/modules.json  [{"path", "vulns": [{"id", "modified", "fixed"}]}]
//	DIR/index/vulns.json    [{"id", "modified", "aliases"}]
//	DIR/ID/GO-YYYY-NNNN.json the entries
//
// as golang.org/x/vulndb/internal/database writes them (its gendb command
// needs the git repository; the module has the entries).
//
//	vulndb -src $(go mod download -json golang.org/x/vulndb@V | jq -r .Dir) -out DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
		Ranges []struct {
			Type   string `json:"type"`
			Events []struct {
				Introduced string `json:"introduced,omitempty"`
				Fixed      string `json:"fixed,omitempty"`
			} `json:"events"`
		} `json:"ranges"`
	} `json:"affected"`
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Fixed    string    `json:"fixed,omitempty"`
}

type module struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

type vuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
}

func main() {
	src := flag.String("src", "", "`dir`ectory of the golang.org/x/vulndb module")
	out := flag.String("out", "", "`dir`ectory to write the database to")
	modified := flag.String("modified", "", "the database's modification `time` (RFC 3339) when its entries have none (the module's)")
	flag.Parse()
	if *src == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	var at time.Time
	if *modified != "" {
		t, err := time.Parse(time.RFC3339, *modified)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vulndb: -modified:", err)
			os.Exit(2)
		}
		at = t
	}
	if err := build(*src, *out, at); err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
}

func build(src, out string, modified time.Time) error {
	files, err := filepath.Glob(filepath.Join(src, "data", "osv", "GO-*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no OSV entries in %s/data/osv", src)
	}
	if err := os.MkdirAll(filepath.Join(out, "ID"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "index"), 0o755); err != nil {
		return err
	}
	newest := modified
	modules := map[string]*module{}
	var vulns []vuln
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var e entry
		if err := json.Unmarshal(data, &e); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(out, "ID", e.ID+".json"), data, 0o644); err != nil {
			return err
		}
		if e.Modified.After(newest) {
			newest = e.Modified
		}
		vulns = append(vulns, vuln{ID: e.ID, Modified: e.Modified, Aliases: e.Aliases})
		for _, a := range e.Affected {
			m := modules[a.Package.Name]
			if m == nil {
				m = &module{Path: a.Package.Name, Vulns: []moduleVuln{}}
				modules[a.Package.Name] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: e.Modified, Fixed: latestFixed(a.Ranges)})
		}
	}
	var mods []*module
	for _, m := range modules {
		slices.SortFunc(m.Vulns, func(a, b moduleVuln) int { return strings.Compare(a.ID, b.ID) })
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b *module) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(vulns, func(a, b vuln) int { return strings.Compare(a.ID, b.ID) })
	for name, v := range map[string]any{
		"db.json": struct {
			Modified time.Time `json:"modified"`
		}{newest},
		"modules.json": mods,
		"vulns.json":   vulns,
	} {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "index", name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("vulndb: %d entries, %d modules, modified %s\n", len(vulns), len(mods), newest.Format(time.DateOnly))
	return nil
}

// latestFixed is the highest fixed version of the SEMVER ranges, without
// its "v", as the database's index has it; "" when none is fixed.
func latestFixed(ranges []struct {
	Type   string `json:"type"`
	Events []struct {
		Introduced string `json:"introduced,omitempty"`
		Fixed      string `json:"fixed,omitempty"`
	} `json:"events"`
}) string {
	latest := ""
	for _, r := range ranges {
		if r.Type != "SEMVER" {
			continue
		}
		for _, e := range r.Events {
			if e.Fixed != "" && (latest == "" || semver.Compare("v"+e.Fixed, "v"+latest) > 0) {
				latest = e.Fixed
			}
		}
	}
	return latest
}
