package iterate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
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
	s := []setting{
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
	if kb, ok := keepBestSetting(c); ok {
		s = append(s, kb)
	}
	s = steerSettings(c, s) // steer.go
	return s
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
// ones, with their exact values, e.g. "coverage threshold 0.875 → 0.88".
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

// ratio formats a threshold exactly (the shortest decimal that reads back
// as v), so that 0.875 and 0.88 are different settings and a change from
// 0.705 to 0.709 reads as such; a negative threshold is "off".
func ratio(v float64) string {
	if v < 0 {
		return "off"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
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

// describe returns the settings of an analyzer, strategy or policy: its
// Settings() string method when it has one, else its type and the values
// of its exported fields, recursively (a list of a named type after its
// type's name), so that two values configured alike describe alike and a
// changed parameter shows. Unexported fields (state,
// hooks, writers) are left out, and functions and channels are described by
// their type alone: they are not settings a resume could compare.
func describe(v any) string {
	if s, ok := v.(interface{ Settings() string }); ok {
		return s.Settings()
	}
	var b strings.Builder
	describeValue(&b, reflect.ValueOf(v), 0)
	return b.String()
}

// stringer returns the String() of a struct value that has one.
func stringer(v reflect.Value) (string, bool) {
	if !v.CanInterface() {
		return "", false
	}
	s, ok := v.Interface().(fmt.Stringer)
	if !ok {
		return "", false
	}
	return s.String(), true
}

func describeValue(b *strings.Builder, v reflect.Value, depth int) {
	if depth > 8 {
		b.WriteString("…")
		return
	}
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("nil")
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		describeValue(b, v.Elem(), depth+1)
	case reflect.Struct:
		if s, ok := stringer(v); ok { // time.Time and the like
			b.WriteString(s)
			return
		}
		t := v.Type()
		b.WriteString(t.String())
		b.WriteByte('{')
		first := true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(f.Name)
			b.WriteByte(':')
			describeValue(b, v.Field(i), depth+1)
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if t := v.Type(); t.Name() != "" {
			// A named list says what it is: converge.Any and converge.All
			// of the same policies decide differently.
			b.WriteString(t.String())
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			describeValue(b, v.Index(i), depth+1)
		}
		b.WriteByte(']')
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int {
			return strings.Compare(fmt.Sprint(x), fmt.Sprint(y))
		})
		b.WriteString("map[")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			describeValue(b, k, depth+1)
			b.WriteByte(':')
			describeValue(b, v.MapIndex(k), depth+1)
		}
		b.WriteByte(']')
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		b.WriteString(v.Type().String())
	default:
		if v.CanInterface() {
			fmt.Fprint(b, v.Interface())
		} else {
			fmt.Fprint(b, v)
		}
	}
}
