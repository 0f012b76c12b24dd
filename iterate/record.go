package iterate

// This file encodes the engine's resume record (engineData) at every save.
//
// The record is JSON, read back with encoding/json (restore, Inspect). It is
// written here by hand, without reflection, and byte for byte as
// json.Marshal(&engineData{...}) writes it (TestRecordEncoderMatchesJSON
// holds the two together), for two reasons: reflection over the record cost
// most of a save (about 12 µs of a 15 µs iteration with an in-memory store),
// and most of the record does not change from one save to the next. The
// settings and the start time are fixed for a run, and a record of the
// history window, once final, never changes: those are encoded once and
// copied after that. A change to engineData or to a type it holds (its
// fields, their tags) must be made here too; the test fails until it is.

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
	"github.com/refine-go/refine/internal/jsonfloat"
)

// recordEncoder encodes engineData, reusing its buffer from save to save
// (one save at a time: see saver).
type recordEncoder struct {
	j jsonBuf
	// The record's first fields, version, settings and start time, do not
	// change during a run: the first headLen bytes of the buffer are their
	// encoding, from headVersion, headSettings and headStarted (none when
	// 0).
	headLen      int
	headVersion  int
	headSettings []setting
	headStarted  time.Time
	// The encodings of the history's final records and of the durations.
	recent, durations encodedWindow
	// bestEnc is the encoding of the best record bestSrc: a best record
	// never changes (a better state is a new record), so it is encoded once.
	bestSrc *bestRecord
	bestEnc []byte
}

// best appends the JSON of b, encoded once per record.
func (e *recordEncoder) best(b *bestRecord) {
	if b != e.bestSrc {
		cj := jsonBuf{b: e.bestEnc[:0]}
		cj.b = append(cj.b, `{"iteration":`...)
		cj.int(int64(b.Iteration))
		cj.key("score")
		cj.float(b.Score)
		if b.Generation != 0 {
			cj.key("generation")
			cj.b = strconv.AppendUint(cj.b, b.Generation, 10)
		}
		cj.key("state")
		if b.State == nil {
			cj.b = append(cj.b, "null"...)
		} else {
			cj.b = append(cj.b, '"')
			cj.b = base64.StdEncoding.AppendEncode(cj.b, b.State)
			cj.b = append(cj.b, '"')
		}
		cj.b = append(cj.b, '}')
		if cj.err != nil {
			e.j.err = cj.err // not cached: reported at every save
			e.bestSrc, e.bestEnc = nil, cj.b[:0]
			return
		}
		e.bestSrc, e.bestEnc = b, cj.b
	}
	e.j.b = append(e.j.b, e.bestEnc...)
}

// encode returns the JSON encoding of d, valid until the next call.
// durationsPushed is the number of durations pushed to the window that
// d.Durations holds the last of, so that each has a key (see appendArray).
func (e *recordEncoder) encode(d *engineData, durationsPushed int) ([]byte, error) {
	j := &e.j
	j.b, j.err = j.b[:0], nil
	e.appendHead(d)
	if !d.LastIterationAt.IsZero() {
		j.key("last_iteration_at")
		j.time(d.LastIterationAt)
	}
	if d.Elapsed != 0 {
		j.key("elapsed")
		j.int(int64(d.Elapsed))
	}
	if len(d.Durations) > 0 {
		j.key("durations")
		e.appendDurations(d.Durations, durationsPushed)
	}
	j.key("usage")
	j.usage(d.Usage)
	if d.Completed != (budget.Usage{}) {
		j.key("completed")
		j.usage(d.Completed)
	}
	if d.History != nil {
		j.key("history")
		e.history(d.History)
	}
	if len(d.Gaps) > 0 {
		j.key("gaps")
		j.gaps(d.Gaps)
	}
	if len(d.Journal) > 0 {
		j.key("journal")
		start := j.openArray()
		for i := range d.Journal {
			j.b = append(j.b, ',')
			j.entry(&d.Journal[i])
		}
		j.closeArray(start)
	}
	if d.Complete {
		j.key("complete")
		j.b = append(j.b, "true"...)
	}
	if d.AnsweredAt != 0 {
		j.key("answered_at")
		j.int(int64(d.AnsweredAt))
	}
	if d.Answer != "" {
		j.key("answer")
		j.str(d.Answer)
	}
	if d.Escalation != nil {
		j.key("escalation")
		j.escalation(d.Escalation)
	}
	if len(d.Unresolved) > 0 {
		j.key("unresolved")
		j.gaps(d.Unresolved)
	}
	j.key("totals")
	j.totals(&d.Totals)
	j.key("decision")
	j.decision(&d.Decision)
	if d.Best != nil {
		j.key("best")
		e.best(d.Best)
	}
	if len(d.Extensions) > 0 {
		// Rare and small: encoding/json's own encoding.
		j.key("extensions")
		if b, err := json.Marshal(d.Extensions); err != nil {
			j.err = err
		} else {
			j.b = append(j.b, b...)
		}
	}
	if d.StateVersion != 0 {
		j.key("state_version")
		j.int(int64(d.StateVersion))
	}
	j.crashes(d)
	j.b = append(j.b, '}')
	// The record opened with the head's brace; every field above wrote its
	// own leading comma.
	return j.b, j.err
}

// appendHead appends `{"v":..,"settings":[..],"started_at":".."`, encoded
// again only when the settings or the start time differ from the last
// call's (they do not, within a run): the record's buffer still holds the
// previous record, which starts with the head.
func (e *recordEncoder) appendHead(d *engineData) {
	j := &e.j
	// == on times: the very value encoded, not merely the same instant.
	if e.headLen > 0 && d.Version == e.headVersion && sameSlice(d.Settings, e.headSettings) && d.StartedAt == e.headStarted {
		j.b = j.b[:e.headLen]
		return
	}
	if j.b == nil {
		j.b = make([]byte, 0, initialRecordSize) // not grown step by step
	}
	e.headLen = 0
	j.b = append(j.b, `{"v":`...)
	j.int(int64(d.Version))
	j.key("settings")
	if d.Settings == nil {
		j.b = append(j.b, "null"...)
	} else {
		start := j.openArray()
		for _, s := range d.Settings {
			j.b = append(j.b, `,{"n":`...)
			j.str(s.Name)
			j.b = append(j.b, `,"v":`...)
			j.str(s.Value)
			j.b = append(j.b, '}')
		}
		j.closeArray(start)
	}
	j.key("started_at")
	j.time(d.StartedAt)
	if j.err == nil { // else not kept: the error is reported at every save
		e.headLen, e.headVersion, e.headSettings, e.headStarted = len(j.b), d.Version, d.Settings, d.StartedAt
	}
}

// initialRecordSize is the first capacity of the record's buffer: enough
// for the settings and a short history.
const initialRecordSize = 2 << 10

// sameSlice reports whether a and b are the same slice (not merely equal).
func sameSlice[T any](a, b []T) bool {
	return (a == nil) == (b == nil) && len(a) == len(b) && cap(a) == cap(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (e *recordEncoder) history(h *converge.History) {
	j := &e.j
	start := j.openObject()
	j.key("iteration")
	j.int(int64(h.Iteration))
	if h.MaxIterations != 0 {
		j.key("max_iterations")
		j.int(int64(h.MaxIterations))
	}
	if h.Window != 0 {
		j.key("window")
		j.int(int64(h.Window))
	}
	if len(h.Recent) > 0 {
		j.key("recent")
		e.appendRecent(h)
	}
	if h.ConsecutiveFailures != 0 {
		j.key("consecutive_failures")
		j.int(int64(h.ConsecutiveFailures))
	}
	if h.Failures != 0 {
		j.key("failures")
		j.int(int64(h.Failures))
	}
	if h.Unchanged != 0 {
		j.key("unchanged")
		j.int(int64(h.Unchanged))
	}
	if len(h.WorkRemaining) > 0 {
		j.key("work_remaining")
		j.strs(h.WorkRemaining)
	}
	if h.BestScore != 0 {
		j.key("best_score")
		j.float(h.BestScore)
	}
	if h.BestIteration != 0 {
		j.key("best_iteration")
		j.int(int64(h.BestIteration))
	}
	if !h.Pending.IsZero() {
		j.key("pending")
		start := j.openObject()
		j.outcome(&h.Pending)
		j.closeObject(start)
	}
	j.closeObject(start)
}

// appendRecent appends the JSON array of h.Recent (not empty). A record is
// final once the history has moved past its iteration: History changes
// only its latest record, and only while that record's iteration is the
// current one (a re-assessment), so a record of an earlier iteration never
// changes and its encoding is cached.
func (e *recordEncoder) appendRecent(h *converge.History) {
	recs := h.Recent
	e.recent.appendArray(&e.j, len(recs),
		func(i int) int { return recs[i].Iteration },
		func(i int) bool { return recs[i].Iteration < h.Iteration },
		func(j *jsonBuf, i int) { j.record(&recs[i]) })
}

// appendDurations appends the JSON array of d.Durations, the durations
// window; every duration in it is final, keyed by the number of durations
// pushed before it.
func (e *recordEncoder) appendDurations(ds []time.Duration, pushed int) {
	first := pushed - len(ds)
	e.durations.appendArray(&e.j, len(ds),
		func(i int) int { return first + i },
		func(int) bool { return true },
		func(j *jsonBuf, i int) { j.int(int64(ds[i])) })
}

// encodedWindow caches the encodings of the values of a sliding window that
// no longer change, so that a save copies them instead of encoding the
// whole window again. Each value has a key, increasing along the window
// and never reused for another value; each encoding is followed by a comma.
// Like the windows it caches, it slides over its buffers, moving their
// contents only when the dropped part outgrows the kept one.
type encodedWindow struct {
	buf     []byte
	keys    []int // the key of each encoding, oldest first, from first on
	ends    []int // the offset in buf just past each encoding's comma
	first   int   // the index in keys of the oldest encoding kept
	scratch jsonBuf
}

// appendArray appends the JSON array of the window's n values (n > 0):
// value i has key(i) and is encoded by enc, once and cached when final(i)
// (the values after a value that is not final are not final either).
func (c *encodedWindow) appendArray(j *jsonBuf, n int, key func(int) int, final func(int) bool, enc func(*jsonBuf, int)) {
	// Drop the encodings of the values that left the window.
	k0 := key(0)
	for c.first < len(c.keys) && c.keys[c.first] < k0 {
		c.first++
	}
	// The rest must be those of the window's first values; if they are not
	// (a window set anew), start over. A window grows at its end and drops
	// values at its start, and its keys increase, so comparing the first
	// and the last of the cached keys is enough.
	cached := len(c.keys) - c.first
	if cached > 0 && (cached > n || key(0) != c.keys[c.first] || key(cached-1) != c.keys[len(c.keys)-1]) {
		c.buf, c.keys, c.ends, c.first, cached = c.buf[:0], c.keys[:0], c.ends[:0], 0, 0
	}
	if c.first > 0 && c.first >= cached {
		// The dropped encodings outnumber the kept ones: move the kept
		// ones to the front.
		cut := c.ends[c.first-1]
		c.buf = c.buf[:copy(c.buf, c.buf[cut:])]
		c.keys = c.keys[:copy(c.keys, c.keys[c.first:])]
		c.ends = c.ends[:copy(c.ends, c.ends[c.first:])]
		for i := range c.ends {
			c.ends[i] -= cut
		}
		c.first = 0
	}
	// Encode the values that became final since.
	for i := cached; i < n && final(i); i++ {
		cj := &c.scratch // not a local: enc would move it to the heap
		cj.b, cj.err = c.buf, nil
		enc(cj, i)
		if cj.err != nil {
			j.err = cj.err // not cached: reported at every save
			break
		}
		c.buf = append(cj.b, ',')
		c.keys = append(c.keys, key(i))
		c.ends = append(c.ends, len(c.buf))
		cached++
	}
	start := 0
	if c.first > 0 {
		start = c.ends[c.first-1]
	}
	j.b = append(j.b, '[')
	j.b = append(j.b, c.buf[start:]...)
	for i := cached; i < n; i++ {
		enc(j, i) // not final (or not encodable): encoded afresh
		j.b = append(j.b, ',')
	}
	j.b[len(j.b)-1] = ']' // over the last comma: n > 0
}

// jsonBuf appends JSON as encoding/json writes it (HTML-escaped strings,
// floats in ES6 form, times in RFC 3339) to b, but for the floats that are
// not finite (see float). The first error (a time out of RFC 3339's range)
// is kept in err, as json.Marshal reports it.
//
// Objects and arrays are written with a comma before every member; closing
// them overwrites the first member's comma with the opening bracket, so
// that omitted fields need no bookkeeping.
type jsonBuf struct {
	b   []byte
	err error
}

func (j *jsonBuf) openObject() int { return len(j.b) }

func (j *jsonBuf) closeObject(start int) { j.close(start, '{', '}') }

func (j *jsonBuf) openArray() int { return len(j.b) }

func (j *jsonBuf) closeArray(start int) { j.close(start, '[', ']') }

func (j *jsonBuf) close(start int, open, close byte) {
	if len(j.b) == start {
		j.b = append(j.b, open, close)
		return
	}
	j.b[start] = open // over the first member's comma
	j.b = append(j.b, close)
}

// key appends a comma and the member name k (a constant needing no
// escaping) with its colon.
func (j *jsonBuf) key(k string) {
	j.b = append(j.b, ',', '"')
	j.b = append(j.b, k...)
	j.b = append(j.b, '"', ':')
}

func (j *jsonBuf) int(n int64) { j.b = strconv.AppendInt(j.b, n, 10) }

func (j *jsonBuf) bool(v bool) { j.b = strconv.AppendBool(j.b, v) }

// str appends s as a JSON string. Strings of plain printable ASCII, the
// common case, are copied; any other goes through encoding/json, whose
// escaping (HTML characters, control characters, invalid UTF-8, U+2028 and
// U+2029) is not worth repeating here.
func (j *jsonBuf) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			j.b = append(j.b, b...)
			return
		}
	}
	j.b = append(j.b, '"')
	j.b = append(j.b, s...)
	j.b = append(j.b, '"')
}

// strs appends a string list (null when nil).
func (j *jsonBuf) strs(ss []string) {
	if ss == nil {
		j.b = append(j.b, "null"...)
		return
	}
	start := j.openArray()
	for _, s := range ss {
		j.b = append(j.b, ',')
		j.str(s)
	}
	j.closeArray(start)
}

// float appends f as encoding/json does (its floatEncoder, for 64 bits),
// and a value that is not finite, which encoding/json refuses, as the
// string "NaN", "+Inf" or "-Inf" (see package jsonfloat, which decodes
// them): a host's NaN or infinite score is saved and resumed as it is.
func (j *jsonBuf) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		j.b = jsonfloat.Append(j.b, f)
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	j.b = strconv.AppendFloat(j.b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(j.b)
		if n >= 4 && j.b[n-4] == 'e' && j.b[n-3] == '-' && j.b[n-2] == '0' {
			j.b[n-2] = j.b[n-1]
			j.b = j.b[:n-1]
		}
	}
}

// time appends t as time.Time's MarshalJSON does: RFC 3339 with
// nanoseconds, for a year of four digits and a zone offset under 24 hours
// (which is what MarshalJSON checks); any other time goes through
// MarshalJSON for its error.
func (j *jsonBuf) time(t time.Time) {
	n := len(j.b)
	j.b = append(j.b, '"')
	j.b = t.AppendFormat(j.b, time.RFC3339Nano)
	b := j.b[n+1:]
	ok := len(b) > len("2006-01-02") && b[len("2006")] == '-'
	if ok && b[len(b)-1] != 'Z' {
		c := b[len(b)-len("Z07:00")]
		h := b[len(b)-len("07:00"):]
		ok = !('0' <= c && c <= '9') && 10*(h[0]-'0')+(h[1]-'0') < 24
	}
	if !ok {
		j.b = j.b[:n]
		enc, err := json.Marshal(t)
		if err != nil {
			if j.err == nil {
				j.err = err // json's own error for it
			}
			enc = []byte(`""`)
		}
		j.b = append(j.b, enc...)
		return
	}
	j.b = append(j.b, '"')
}

func (j *jsonBuf) usage(u budget.Usage) {
	start := j.openObject()
	if u.Iterations != 0 {
		j.key("iterations")
		j.int(int64(u.Iterations))
	}
	if u.Tokens != 0 {
		j.key("tokens")
		j.int(u.Tokens)
	}
	if u.Cost != 0 {
		j.key("cost")
		j.float(u.Cost)
	}
	if u.Wall != 0 {
		j.key("wall")
		j.int(int64(u.Wall))
	}
	if u.Calls != 0 {
		j.key("calls")
		j.int(u.Calls)
	}
	if u.InputTokens != 0 {
		j.key("input_tokens")
		j.int(u.InputTokens)
	}
	if u.OutputTokens != 0 {
		j.key("output_tokens")
		j.int(u.OutputTokens)
	}
	if u.CacheReadTokens != 0 {
		j.key("cache_read_tokens")
		j.int(u.CacheReadTokens)
	}
	if u.CacheWriteTokens != 0 {
		j.key("cache_write_tokens")
		j.int(u.CacheWriteTokens)
	}
	j.closeObject(start)
}

func (j *jsonBuf) totals(t *Totals) {
	j.b = append(j.b, `{"Iterations":`...)
	j.int(int64(t.Iterations))
	j.b = append(j.b, `,"Tasks":`...)
	j.int(int64(t.Tasks))
	j.b = append(j.b, `,"FailedTasks":`...)
	j.int(int64(t.FailedTasks))
	j.b = append(j.b, `,"Duration":`...)
	j.int(int64(t.Duration))
	j.b = append(j.b, '}')
}

func (j *jsonBuf) decision(d *converge.Decision) {
	j.b = append(j.b, `{"verdict":`...)
	j.int(int64(d.Verdict))
	if d.Reason != "" {
		j.key("reason")
		j.str(d.Reason)
	}
	if len(d.Criteria) > 0 {
		j.key("criteria")
		j.criteria(d.Criteria)
	}
	j.b = append(j.b, '}')
}

// criteria appends the array of cs.
func (j *jsonBuf) criteria(cs []converge.Criterion) {
	start := j.openArray()
	for i := range cs {
		c := &cs[i]
		j.b = append(j.b, `,{"name":`...)
		j.str(c.Name)
		j.key("value")
		j.float(c.Value)
		j.key("threshold")
		j.float(c.Threshold)
		j.key("met")
		j.bool(c.Met)
		if c.Detail != "" {
			j.key("detail")
			j.str(c.Detail)
		}
		j.b = append(j.b, '}')
	}
	j.closeArray(start)
}

// record appends a history record, with its Outcome's fields inline (it is
// embedded).
func (j *jsonBuf) record(r *converge.Record) {
	j.b = append(j.b, `{"iteration":`...)
	j.int(int64(r.Iteration))
	if r.Coverage != 0 {
		j.key("coverage")
		j.float(r.Coverage)
	}
	if r.Confidence != 0 {
		j.key("confidence")
		j.float(r.Confidence)
	}
	if r.Score != 0 {
		j.key("score")
		j.float(r.Score)
	}
	if len(r.Scores) > 0 {
		j.key("scores")
		start := j.openObject()
		for _, k := range slices.Sorted(maps.Keys(r.Scores)) { // json sorts map keys
			j.b = append(j.b, ',')
			j.str(k)
			j.b = append(j.b, ':')
			j.float(r.Scores[k])
		}
		j.closeObject(start)
	}
	if r.Conflicts != 0 {
		j.key("conflicts")
		j.int(int64(r.Conflicts))
	}
	if r.Gaps != 0 {
		j.key("gaps")
		j.int(int64(r.Gaps))
	}
	if r.Fixable != 0 {
		j.key("fixable")
		j.int(int64(r.Fixable))
	}
	if r.Triggers != 0 {
		j.key("triggers")
		j.b = strconv.AppendUint(j.b, r.Triggers, 10)
	}
	if r.Summary != "" {
		j.key("summary")
		j.str(r.Summary)
	}
	if len(r.Kinds) > 0 {
		j.key("kinds")
		start := j.openObject()
		for _, k := range slices.Sorted(maps.Keys(r.Kinds)) { // json sorts map keys
			j.b = append(j.b, ',')
			j.str(string(k))
			j.b = append(j.b, ':')
			j.int(int64(r.Kinds[k]))
		}
		j.closeObject(start)
	}
	if r.Priorities != [3]int{} {
		j.key("priorities")
		j.b = append(j.b, '[')
		for i, n := range r.Priorities {
			if i > 0 {
				j.b = append(j.b, ',')
			}
			j.int(int64(n))
		}
		j.b = append(j.b, ']')
	}
	if r.Verdict != converge.Continue {
		j.key("verdict")
		j.int(int64(r.Verdict))
	}
	if len(r.Unmet) > 0 {
		j.key("unmet")
		j.criteria(r.Unmet)
	}
	j.outcome(&r.Attempt)
	j.b = append(j.b, '}')
}

// outcome appends the fields of o, each after a comma.
func (j *jsonBuf) outcome(o *converge.Attempt) {
	if o.Failed {
		j.key("failed")
		j.b = append(j.b, "true"...)
	}
	if o.Action != "" {
		j.key("action")
		j.str(o.Action)
	}
	if o.Duration != 0 {
		j.key("duration")
		j.int(int64(o.Duration))
	}
	if o.Tasks != 0 {
		j.key("tasks")
		j.int(int64(o.Tasks))
	}
	if o.FailedTasks != 0 {
		j.key("failed_tasks")
		j.int(int64(o.FailedTasks))
	}
	if o.Tokens != 0 {
		j.key("tokens")
		j.int(o.Tokens)
	}
	if o.Cost != 0 {
		j.key("cost")
		j.float(o.Cost)
	}
	if o.Calls != 0 {
		j.key("calls")
		j.int(o.Calls)
	}
	if len(o.TaskRuns) > 0 {
		j.key("task_runs")
		start := j.openArray()
		for i := range o.TaskRuns {
			t := &o.TaskRuns[i]
			j.b = append(j.b, ',')
			ts := j.openObject()
			if t.Role != "" {
				j.key("role")
				j.str(t.Role)
			}
			if t.Kind != "" {
				j.key("kind")
				j.str(string(t.Kind))
			}
			if t.Target != "" {
				j.key("target")
				j.str(t.Target)
			}
			if t.Duration != 0 {
				j.key("duration")
				j.int(int64(t.Duration))
			}
			if t.Tokens != 0 {
				j.key("tokens")
				j.int(t.Tokens)
			}
			if t.Err != "" {
				j.key("err")
				j.str(t.Err)
			}
			if t.Output != "" {
				j.key("output")
				j.str(t.Output)
			}
			j.closeObject(ts)
		}
		j.closeArray(start)
	}
	if len(o.Actions) > 0 {
		j.key("actions")
		j.strs(o.Actions)
	}
}

func (j *jsonBuf) gaps(gs []gap.Gap) {
	start := j.openArray()
	for i := range gs {
		g := &gs[i]
		j.b = append(j.b, `,{"kind":`...)
		j.str(string(g.Kind))
		if g.Priority != 0 {
			j.key("priority")
			j.int(int64(g.Priority))
		}
		j.key("severity")
		j.float(g.Severity)
		j.key("fixable")
		j.bool(g.Fixable)
		if g.Target != "" {
			j.key("target")
			j.str(g.Target)
		}
		if g.Detail != "" {
			j.key("detail")
			j.str(g.Detail)
		}
		if g.Source != "" {
			j.key("source")
			j.str(g.Source)
		}
		if g.Relevance != 0 {
			j.key("relevance")
			j.float(g.Relevance)
		}
		if len(g.Focus) > 0 {
			j.key("focus")
			j.strs(g.Focus)
		}
		j.b = append(j.b, '}')
	}
	j.closeArray(start)
}

func (j *jsonBuf) entry(e *entry) {
	j.b = append(j.b, `{"iteration":`...)
	j.int(int64(e.Iteration))
	j.key("index")
	j.int(int64(e.Index))
	if e.Role != "" {
		j.key("role")
		j.str(e.Role)
	}
	if e.Key != "" {
		j.key("key")
		j.str(e.Key)
	}
	if len(e.Part) > 0 {
		j.key("part")
		j.b = append(j.b, '"')
		j.b = base64.StdEncoding.AppendEncode(j.b, e.Part)
		j.b = append(j.b, '"')
	}
	j.key("usage")
	j.usage(e.Usage)
	if e.Done {
		j.key("done")
		j.b = append(j.b, "true"...)
	}
	if e.Err != "" {
		j.key("err")
		j.str(e.Err)
	}
	if e.Permanent {
		j.key("permanent")
		j.b = append(j.b, "true"...)
	}
	if e.Duration != 0 {
		j.key("duration")
		j.int(int64(e.Duration))
	}
	if e.Output != "" {
		j.key("output")
		j.str(e.Output)
	}
	if len(e.Actions) > 0 {
		j.key("actions")
		j.strs(e.Actions)
	}
	j.b = append(j.b, '}')
}

func (j *jsonBuf) escalation(e *Escalation) {
	j.b = append(j.b, `{"iteration":`...)
	j.int(int64(e.Iteration))
	j.key("reason")
	j.str(e.Reason)
	if len(e.Attempts) > 0 {
		j.key("attempts")
		j.strs(e.Attempts)
	}
	if e.Pattern != "" {
		j.key("pattern")
		j.str(e.Pattern)
	}
	j.key("question")
	j.str(e.Question)
	if e.Feedback != "" {
		j.key("feedback")
		j.str(e.Feedback)
	}
	j.deadline(e)
	j.parked(e.Parked) // park.go
	j.b = append(j.b, '}')
}

// The record's decoding: encoding/json's, but for the floats that are not
// finite, which the encoder writes as strings (see jsonBuf.float) and
// these methods read back (those of converge.Record, converge.History,
// converge.Criterion and gap.Gap read theirs).

// UnmarshalJSON decodes the record, with its usages' costs.
func (d *engineData) UnmarshalJSON(data []byte) error {
	type fields engineData // engineData's fields, without this method
	v := struct {
		*fields
		Usage     usageRef `json:"usage"`
		Completed usageRef `json:"completed"`
	}{(*fields)(d), usageRef{&d.Usage}, usageRef{&d.Completed}}
	return json.Unmarshal(data, &v)
}

// UnmarshalJSON decodes a journal entry, with its usage's cost.
func (e *entry) UnmarshalJSON(data []byte) error {
	type fields entry // entry's fields, without this method
	v := struct {
		*fields
		Usage usageRef `json:"usage"`
	}{(*fields)(e), usageRef{&e.Usage}}
	return json.Unmarshal(data, &v)
}

// UnmarshalJSON decodes the best state's record, with its score.
func (b *bestRecord) UnmarshalJSON(data []byte) error {
	type fields bestRecord // bestRecord's fields, without this method
	v := struct {
		*fields
		Score jsonfloat.Ref `json:"score"`
	}{(*fields)(b), jsonfloat.Ref{F: &b.Score}}
	return json.Unmarshal(data, &v)
}

// usageRef decodes a budget.Usage into *u, with its cost.
type usageRef struct{ u *budget.Usage }

func (r usageRef) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v := struct {
		*budget.Usage
		Cost jsonfloat.Ref `json:"cost"`
	}{r.u, jsonfloat.Ref{F: &r.u.Cost}}
	return json.Unmarshal(data, &v)
}
