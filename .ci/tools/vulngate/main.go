// Command vulngate reads govulncheck -format json on stdin and fails on a
// vulnerability that the code reaches (a finding with a called function),
// except one of the standard library fixed in the minimum patched Go that
// the README states (-min-go): a build of the modules with that Go has it
// fixed, whatever Go runs the check.
//
//	govulncheck -db file:///DB -format json ./... | vulngate -min-go go1.26.10
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

type message struct {
	Finding *struct {
		OSV          string `json:"osv"`
		FixedVersion string `json:"fixed_version"`
		Trace        []struct {
			Module   string `json:"module"`
			Version  string `json:"version"`
			Package  string `json:"package"`
			Function string `json:"function"`
			Receiver string `json:"receiver"`
		} `json:"trace"`
	} `json:"finding"`
	OSV *struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"osv"`
}

func main() {
	minGo := flag.String("min-go", "", "the minimum patched Go `version` (go1.26.10)")
	flag.Parse()
	if !strings.HasPrefix(*minGo, "go") || !semver.IsValid("v"+strings.TrimPrefix(*minGo, "go")) {
		fmt.Fprintln(os.Stderr, "vulngate: -min-go must be a Go version such as go1.26.10")
		os.Exit(2)
	}
	min := "v" + strings.TrimPrefix(*minGo, "go")

	summaries := map[string]string{}
	type found struct{ module, version, fixed, where string }
	reached := map[string]found{}
	dec := json.NewDecoder(os.Stdin)
	for {
		var m message
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "vulngate: reading govulncheck's JSON:", err)
			os.Exit(2)
		}
		if m.OSV != nil {
			summaries[m.OSV.ID] = m.OSV.Summary
		}
		f := m.Finding
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" {
			continue // a module or package is imported; no vulnerable function is called
		}
		if _, ok := reached[f.OSV]; ok {
			continue
		}
		t := f.Trace[0]
		fn := t.Function
		if t.Receiver != "" {
			fn = t.Receiver + "." + fn
		}
		reached[f.OSV] = found{module: t.Module, version: t.Version, fixed: f.FixedVersion, where: t.Package + "." + fn}
	}

	ids := make([]string, 0, len(reached))
	for id := range reached {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	failed := 0
	for _, id := range ids {
		r := reached[id]
		fixed := strings.TrimPrefix(r.fixed, "go")
		if !strings.HasPrefix(fixed, "v") && fixed != "" {
			fixed = "v" + fixed
		}
		ok := r.module == "stdlib" && fixed != "" && semver.Compare(fixed, min) <= 0
		verdict := "FAIL"
		if ok {
			verdict = "fixed in " + *minGo
		} else {
			failed++
		}
		fmt.Printf("%s: %s %s@%s, fixed in %s, reached: %s (%s)\n", verdict, id, r.module, r.version, orNone(r.fixed), r.where, summaries[id])
	}
	if failed > 0 {
		fmt.Printf("vulngate: %d reachable vulnerabilities not fixed by %s: upgrade the module, or raise the minimum patched Go (README, .ci/govulncheck)\n", failed, *minGo)
		os.Exit(1)
	}
	fmt.Printf("vulngate: no reachable vulnerability unfixed in %s (%d of the standard library in the Go running this check)\n", *minGo, len(ids))
}

func orNone(s string) string {
	if s == "" {
		return "no version"
	}
	return s
}
