package iterate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// setting is one value that changes what a loop decides. The engine saves
// its settings in every checkpoint; the fingerprint is their hash, and a
// resume under a changed value names it.
type setting struct {
	Name  string `json:"n"`
	Value string `json:"v"`
}

// settingsOf lists the effective settings of c: every threshold, limit and
// window, and the values of the analyzer, strategy and policy.
func settingsOf(c *config) []setting {
	t := c.thresholds.Effective()
	l := c.limits
	return []setting{
		{"max iterations", strconv.Itoa(c.maxIterations)},
		{"failure threshold", strconv.Itoa(c.failureThreshold)},
		{"coverage threshold", ratio(t.MinCoverage)},
		{"confidence threshold", ratio(t.MinConfidence)},
		{"max conflicts", strconv.Itoa(t.MaxConflicts)},
		{"allow unanswered", strconv.FormatBool(t.AllowUnanswered)},
		{"early-exit coverage", ratio(t.EarlyCoverage)},
		{"early-exit confidence", ratio(t.EarlyConfidence)},
		{"completeness threshold", ratio(t.MinCompleteness)},
		{"quality threshold", ratio(t.MinQuality)},
		{"signal confidence threshold", ratio(t.MinSignalConfidence)},
		{"iteration limit", strconv.Itoa(l.Iterations)},
		{"token limit", strconv.FormatInt(l.Tokens, 10)},
		{"cost limit", strconv.FormatFloat(l.Cost, 'g', -1, 64)},
		{"wall-time limit", l.Wall.String()},
		{"call limit", strconv.FormatInt(l.Calls, 10)},
		{"budget warning level", strconv.FormatFloat(l.WarnAt, 'g', -1, 64)},
		{"warn-only resources", strconv.Itoa(int(l.WarnOnly))},
		{"estimate", estimateString(c)},
		{"history window", strconv.Itoa(c.window)},
		{"task timeout", durationOrNone(c.taskTimeout)},
		{"analyzer", describe(c.analyzer)},
		{"strategy", describe(c.strategy)},
		{"policy", describe(c.policy)},
		{"host settings", c.fingerprintExtra},
	}
}

// fingerprintOf hashes settings.
func fingerprintOf(settings []setting) string {
	h := sha256.New()
	for _, s := range settings {
		fmt.Fprintf(h, "%s=%s\n", s.Name, s.Value)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// changes lists what differs between the saved settings and the current
// ones, e.g. "coverage threshold 0.30 → 0.90".
func changes(saved, now []setting) []string {
	old := make(map[string]string, len(saved))
	for _, s := range saved {
		old[s.Name] = s.Value
	}
	var out []string
	for _, s := range now {
		v, ok := old[s.Name]
		switch {
		case !ok:
			out = append(out, s.Name+" (new) "+quoteEmpty(s.Value))
		case v != s.Value:
			out = append(out, s.Name+" "+quoteEmpty(v)+" → "+quoteEmpty(s.Value))
		}
		delete(old, s.Name)
	}
	for _, s := range saved {
		if _, gone := old[s.Name]; gone {
			out = append(out, s.Name+" (no longer set) "+quoteEmpty(s.Value))
		}
	}
	return out
}

func quoteEmpty(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

func ratio(v float64) string {
	if v < 0 {
		return "off"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func durationOrNone(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}

func estimateString(c *config) string {
	if !c.estimated {
		return "from previous iterations"
	}
	u := c.estimate
	return fmt.Sprintf("%d iterations, %d tokens, %g cost, %s, %d calls", u.Iterations, u.Tokens, u.Cost, u.Wall, u.Calls)
}

// addresses matches the pointers %#v prints for funcs, channels and
// pointers nested in a value: they differ from run to run.
var addresses = regexp.MustCompile(`\(0x[0-9a-f]+\)|0x[0-9a-f]+`)

// describe returns the settings of an analyzer, strategy or policy: its
// Settings() string method when it has one, else its Go syntax with
// addresses removed, so that two values configured alike describe alike
// and a changed field shows. A function is described by its type alone.
func describe(v any) string {
	if s, ok := v.(interface{ Settings() string }); ok {
		return s.Settings()
	}
	return strings.TrimSpace(addresses.ReplaceAllString(fmt.Sprintf("%#v", v), "(func)"))
}
