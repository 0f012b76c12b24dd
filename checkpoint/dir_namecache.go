package checkpoint

// This file is what a Dir knows of its directory's sessions for
// SessionsAfter: the body of a snapshot (or of a listing), kept as one
// string of sorted lines and bisected for a page's first name, and what
// the journal said since, kept apart until the next snapshot.

import (
	"iter"
	"os"
	"slices"
	"strings"
)

// nameCache is what a Dir knows of its directory's sessions: base, lines
// "NAME" or "NAME\tINFO" each ending in a newline, sorted by name (a
// snapshot's body, see snapshotName; INFO is what a listing showed of the
// session, none for a session known from the journal only), with the
// sessions the journal created since (adds, sorted, none of base's) and
// removed since (removed, of base's). It is replaced, never changed in
// place.
type nameCache struct {
	base    string
	adds    []string
	removed map[string]bool
	journal os.FileInfo // the journal read, nil if there was none
	off     int64       // how far it was read
	snapOff int64       // how far the snapshot on disk covers it, as far as this Dir knows
}

// lineName splits a line of base (without its newline) into its name and
// INFO.
func lineName(line string) (name, info string) {
	name, info, _ = strings.Cut(line, "\t")
	return name, info
}

// seek returns the offset in base of the first line whose name sorts
// after after (len(base) if none), by bisection.
func seek(base, after string) int {
	lo, hi := 0, len(base) // line starts; lines before lo sort up to after, from hi on after it
	for lo < hi {
		mid := lo + (hi-lo)/2
		start := lo
		if k := strings.LastIndexByte(base[lo:mid], '\n'); k >= 0 {
			start = lo + k + 1
		}
		end := len(base)
		if k := strings.IndexByte(base[start:], '\n'); k >= 0 {
			end = start + k + 1
		}
		if name, _ := lineName(strings.TrimSuffix(base[start:end], "\n")); name <= after {
			lo = end
		} else {
			hi = start
		}
	}
	return lo
}

// inBase reports whether base has a line for session.
func inBase(base, session string) bool {
	i := seek(base, session)
	if i == 0 {
		return false
	}
	start := strings.LastIndexByte(base[:i-1], '\n') + 1
	name, _ := lineName(strings.TrimSuffix(base[start:i], "\n"))
	return name == session
}

// after returns the sessions whose names sort after after, in the order
// of their names, each with its INFO. A base whose lines are not sorted
// (a snapshot written by hand) yields some of its names, never one twice.
func (c *nameCache) after(after string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		i := seek(c.base, after)
		j, found := slices.BinarySearch(c.adds, after)
		if found {
			j++
		}
		last := after
		for i < len(c.base) || j < len(c.adds) {
			var name, info string
			end := len(c.base)
			if i < len(c.base) {
				if k := strings.IndexByte(c.base[i:], '\n'); k >= 0 {
					end = i + k + 1
				}
				name, info = lineName(strings.TrimSuffix(c.base[i:end], "\n"))
			}
			switch {
			case i < len(c.base) && (j == len(c.adds) || name <= c.adds[j]):
				i = end
				if c.removed[name] {
					continue
				}
			default:
				name, info = c.adds[j], ""
				j++
			}
			if name <= last {
				continue
			}
			last = name
			if !yield(name, info) {
				return
			}
		}
	}
}

// empty reports whether c holds no session.
func (c *nameCache) empty() bool {
	for range c.after("") {
		return false
	}
	return true
}

// materialize returns the lines of c's sessions, as a base.
func (c *nameCache) materialize() string {
	if len(c.adds) == 0 && len(c.removed) == 0 {
		return c.base
	}
	var b strings.Builder
	b.Grow(len(c.base) + 16*len(c.adds))
	for name, info := range c.after("") {
		b.WriteString(name)
		if info != "" {
			b.WriteByte('\t')
			b.WriteString(info)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// with returns a copy of c with the sessions of ops created ('+') or
// removed ('-'); the copy shares what did not change.
func (c *nameCache) with(ops map[string]byte) *nameCache {
	out := *c
	var adds []string
	drop := make(map[string]bool)
	cloned := false
	for s, op := range ops {
		if inBase(c.base, s) {
			if (op == '-') == c.removed[s] {
				continue
			}
			if !cloned {
				out.removed, cloned = make(map[string]bool, len(c.removed)+1), true
				for k := range c.removed {
					out.removed[k] = true
				}
			}
			if op == '-' {
				out.removed[s] = true
			} else {
				delete(out.removed, s)
			}
			continue
		}
		_, found := slices.BinarySearch(c.adds, s)
		switch {
		case op == '+' && !found:
			adds = append(adds, s)
		case op == '-' && found:
			drop[s] = true
		}
	}
	if len(adds) > 0 || len(drop) > 0 {
		slices.Sort(adds)
		merged := make([]string, 0, len(c.adds)+len(adds))
		k := 0
		for _, s := range c.adds {
			for k < len(adds) && adds[k] < s {
				merged = append(merged, adds[k])
				k++
			}
			if !drop[s] {
				merged = append(merged, s)
			}
		}
		out.adds = append(merged, adds[k:]...)
	}
	return &out
}
