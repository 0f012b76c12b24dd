package main

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/iterate"
)

// The page shows the loop's settings as names and readable values: a limit
// of 0 is "none", the engine's iteration limit and the budget's are one
// row, and a strategy, policy or analyzer (which the engine records as a
// dump of its Go value, "iterate.Adaptive{Roles:map[], MaxTasks:1, …}")
// reads as its type and the fields set: "Adaptive (MaxTasks 1, …)". --json
// keeps the values as the engine recorded them.

// setting is one row of the page's settings.
type setting struct {
	Name, Value string
}

// readableSettings returns r's settings for the page.
func readableSettings(r *iterate.Report) []setting {
	out := make([]setting, 0, len(r.Settings))
	limitDone := false
	for _, kv := range r.Settings {
		name, v := kv[0], kv[1]
		switch name {
		case "max iterations", "iteration limit":
			// One row, where the first of the two stood: the limit the
			// loop stops at (the lower of the engine's and the budget's).
			if limitDone {
				continue
			}
			limitDone = true
			name, v = "iteration limit", "none"
			if n := iterationLimit(r); n > 0 {
				v = strconv.Itoa(n)
			}
		case "history window":
			if v == "0" {
				v = "default (" + strconv.Itoa(converge.DefaultWindow) + ")"
			}
		default:
			v = readable(name, v)
		}
		out = append(out, setting{name, v})
	}
	return out
}

// iterationLimit is the iteration limit the loop started under: the lower
// of the engine's (WithMaxIterations) and the budget's, 0 when neither is
// set. An answer to an escalation raises the engine's by as many again.
func iterationLimit(r *iterate.Report) int {
	n, b := r.History.MaxIterations, r.Limits.Iterations
	if b > 0 && (n == 0 || b < n) {
		return b
	}
	return n
}

// readable formats the value v of the setting name.
func readable(name, v string) string {
	switch {
	case v == "":
		return "none"
	case (strings.HasSuffix(name, " limit") || name == "budget warning level" || name == "warn-only resources") &&
		(v == "0" || v == "0s"):
		return "none"
	}
	if !strings.ContainsAny(v, "{[") {
		return v
	}
	p := &dumpParser{s: v}
	if d, ok := p.value(); ok && p.i == len(v) {
		if s := d.String(); s != "" {
			return s
		}
		return "none"
	}
	// A dump this does not read (a field holding ", " or braces): its type
	// alone rather than the dump.
	if m := typeDump.FindStringSubmatch(v); m != nil {
		return m[1] + " (its fields: see --json)"
	}
	return v
}

// typeDump matches the start of a struct's dump and captures its type.
var typeDump = regexp.MustCompile(`^[&*]?(?:[A-Za-z_]\w*\.)?([A-Za-z_]\w*)\{`)

// dump is a parsed Go value's dump, as iterate describes a setting: a
// struct "pkg.T{A:1, B:x}", a list "[a, b]", a map "map[k:v k2:v2]" or a
// scalar.
type dump struct {
	typ    string // a struct's or a named list's type, without its package
	fields [][2]string
	isList bool
	items  []dump
	isMap  bool
	scalar string
}

// String renders the dump readably: a struct as its type and the fields
// not zero, "Adaptive (MaxTasks 1, EscalateAfter 3)"; a list as its items,
// comma separated (after its type, "anyOf(a, b)", when it has one); a map as
// "key → value" pairs; "" for a zero value.
func (d dump) String() string {
	switch {
	case d.isList:
		var parts []string
		for _, it := range d.items {
			if s := it.String(); s != "" {
				parts = append(parts, s)
			}
		}
		if d.typ != "" {
			return d.typ + "(" + strings.Join(parts, ", ") + ")"
		}
		return strings.Join(parts, ", ")
	case d.isMap:
		parts := make([]string, 0, len(d.fields))
		for _, kv := range d.fields {
			k := kv[0]
			if k == "" {
				k = `""`
			}
			parts = append(parts, k+" → "+kv[1])
		}
		return strings.Join(parts, ", ")
	case d.typ != "":
		var parts []string
		for _, f := range d.fields {
			if f[1] != "" {
				parts = append(parts, f[0]+" "+f[1])
			}
		}
		if len(parts) == 0 {
			return d.typ
		}
		return d.typ + " (" + strings.Join(parts, ", ") + ")"
	}
	switch d.scalar {
	case "0", "false", "nil", "0s", `""`:
		return ""
	}
	return d.scalar
}

// dumpParser parses a dump; a dump it does not read whole is shown as it is.
type dumpParser struct {
	s string
	i int
}

func (p *dumpParser) peek(prefix string) bool { return strings.HasPrefix(p.s[p.i:], prefix) }

// value parses one value.
func (p *dumpParser) value() (dump, bool) { return p.parse(false) }

// parse parses one value; inMap says that a space ends a scalar (the
// separator of a map's entries).
func (p *dumpParser) parse(inMap bool) (dump, bool) {
	switch {
	case p.peek("map["):
		p.i += len("map[")
		d := dump{isMap: true}
		for !p.peek("]") {
			if len(d.fields) > 0 {
				if !p.peek(" ") {
					return d, false
				}
				p.i++
			}
			k := p.scalar(":")
			if !p.peek(":") {
				return d, false
			}
			p.i++
			v, ok := p.parse(true)
			if !ok {
				return d, false
			}
			d.fields = append(d.fields, [2]string{k, v.String()})
			if p.i >= len(p.s) {
				return d, false
			}
		}
		p.i++
		return d, true
	case p.peek("["):
		p.i++
		d := dump{isList: true}
		for !p.peek("]") {
			if len(d.items) > 0 {
				if !p.peek(", ") {
					return d, false
				}
				p.i += 2
			}
			v, ok := p.parse(false)
			if !ok || p.i >= len(p.s) {
				return d, false
			}
			d.items = append(d.items, v)
		}
		p.i++
		return d, true
	}
	// A struct: a type name followed by '{'; a list of a named type
	// (converge.Any's "converge.anyOf[…]"): its name followed by '['.
	j := p.i
	for j < len(p.s) && (isIdent(p.s[j]) || p.s[j] == '.' || p.s[j] == '*') {
		j++
	}
	if j > p.i && j < len(p.s) && p.s[j] == '[' && !p.peek("map[") {
		typ := p.s[p.i:j]
		if k := strings.LastIndexByte(typ, '.'); k >= 0 {
			typ = typ[k+1:]
		}
		p.i = j
		d, ok := p.parse(false)
		d.typ = typ
		return d, ok
	}
	if j > p.i && j < len(p.s) && p.s[j] == '{' {
		typ := p.s[p.i:j]
		if k := strings.LastIndexByte(typ, '.'); k >= 0 {
			typ = typ[k+1:]
		}
		p.i = j + 1
		d := dump{typ: typ}
		for !p.peek("}") {
			if len(d.fields) > 0 {
				if !p.peek(", ") {
					return d, false
				}
				p.i += 2
			}
			k := p.scalar(":")
			if !p.peek(":") {
				return d, false
			}
			p.i++
			v, ok := p.parse(false)
			if !ok || p.i >= len(p.s) {
				return d, false
			}
			d.fields = append(d.fields, [2]string{k, v.String()})
		}
		p.i++
		return d, true
	}
	stop := ",}]"
	if inMap {
		stop = " ]"
	}
	return dump{scalar: p.scalar(stop)}, true
}

// scalar reads up to one of the bytes of stop.
func (p *dumpParser) scalar(stop string) string {
	j := p.i
	for j < len(p.s) && !strings.ContainsRune(stop, rune(p.s[j])) {
		j++
	}
	s := p.s[p.i:j]
	p.i = j
	return s
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
