package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// The output documents (decisions, the escalation, the report) are built
// once as ordered trees and rendered either as YAML, in the layout of the
// seeds, or as one line of JSON each.
//
// A value is a string, a block (a multi-line string, a YAML "|" block), an
// int, an int64, a float64 (rounded to 3 decimals), a bool, an obj or a
// list.
type (
	field struct {
		k string
		v any
	}
	obj   []field
	list  []any
	block string
)

// renderYAML writes o as YAML at the given indentation.
func renderYAML(b *bytes.Buffer, o obj, indent int) {
	pad := strings.Repeat(" ", indent)
	for _, f := range o {
		b.WriteString(pad)
		b.WriteString(f.k)
		b.WriteByte(':')
		yamlValue(b, f.v, indent)
	}
}

// yamlValue writes the value of a key (after its colon) and the newline.
func yamlValue(b *bytes.Buffer, v any, indent int) {
	switch v := v.(type) {
	case obj:
		if len(v) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteByte('\n')
		renderYAML(b, v, indent+2)
	case list:
		if len(v) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteByte('\n')
		yamlList(b, v, indent+2)
	case block:
		s := strings.TrimRight(string(v), "\n")
		if !strings.Contains(s, "\n") {
			b.WriteByte(' ')
			b.WriteString(scalar(s))
			b.WriteByte('\n')
			return
		}
		b.WriteString(" |\n")
		pad := strings.Repeat(" ", indent+2)
		for l := range strings.SplitSeq(s, "\n") {
			if l != "" {
				b.WriteString(pad)
				b.WriteString(l)
			}
			b.WriteByte('\n')
		}
	default:
		b.WriteByte(' ')
		b.WriteString(scalar(v))
		b.WriteByte('\n')
	}
}

// yamlList writes the items of a list, each "- " at indent.
func yamlList(b *bytes.Buffer, l list, indent int) {
	pad := strings.Repeat(" ", indent)
	for _, it := range l {
		switch it := it.(type) {
		case obj:
			var sub bytes.Buffer
			renderYAML(&sub, it, indent+2)
			s := sub.String()
			b.WriteString(pad + "- ")
			b.WriteString(s[indent+2:])
		default:
			b.WriteString(pad + "- ")
			b.WriteString(scalar(it))
			b.WriteByte('\n')
		}
	}
}

// scalar renders a scalar: strings double-quoted (JSON escapes are valid
// YAML), numbers and booleans as they are.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case block:
		return quote(string(v))
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(round3(v), 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	}
	return quote("?")
}

func round3(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1000) / 1000
}

// quote returns s as a JSON string, without HTML escaping.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// renderJSON writes v as compact JSON, keeping the order of obj fields.
func renderJSON(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case obj:
		b.WriteByte('{')
		for i, f := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(f.k))
			b.WriteByte(':')
			renderJSON(b, f.v)
		}
		b.WriteByte('}')
	case list:
		b.WriteByte('[')
		for i, it := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			renderJSON(b, it)
		}
		b.WriteByte(']')
	default:
		b.WriteString(scalar(v))
	}
}

// printer writes documents to the standard output: YAML documents each
// starting with "---", or one JSON object per line. Safe for concurrent
// use.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

func (p *printer) print(o obj) {
	var b bytes.Buffer
	if p.json {
		renderJSON(&b, o)
		b.WriteByte('\n')
	} else {
		b.WriteString("---\n")
		renderYAML(&b, o, 0)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.w.Write(b.Bytes())
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
