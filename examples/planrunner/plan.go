package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalidPlan is matched (with errors.Is) by every *PlanError and
// *CycleError: the plan cannot be run as written.
var ErrInvalidPlan = errors.New("planrunner: invalid plan")

// PlanError reports a plan that cannot be run: no phases, a duplicate phase
// number, a dependency on a phase that does not exist.
type PlanError struct {
	Path string
	// Line is 1-indexed; 0 when the problem is not on one line.
	Line int
	Msg  string
}

func (e *PlanError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

// Is reports whether target is ErrInvalidPlan.
func (e *PlanError) Is(target error) bool { return target == ErrInvalidPlan }

// CycleError reports phases whose dependencies form a cycle: no wave can
// run them.
type CycleError struct {
	Path   string
	Phases []int
}

func (e *CycleError) Error() string {
	names := make([]string, len(e.Phases))
	for i, n := range e.Phases {
		names[i] = phaseName(n)
	}
	return e.Path + ": dependency cycle among " + strings.Join(names, ", ")
}

// Is reports whether target is ErrInvalidPlan.
func (e *CycleError) Is(target error) bool { return target == ErrInvalidPlan }

// markerComplete is the phase marker of a finished phase.
const (
	markerComplete   = "COMPLETE"
	markerInProgress = "IN PROGRESS"
)

// Plan is a parsed Markdown plan: its lines, the `### Phase N: title`
// headings with their `- [ ]` / `- [x]` tasks and `Depends on:` lines, and
// the `**Status**:` line of its metadata. Edits (checking a task, setting a
// marker, setting the status) change lines in place and never add or remove
// one, so line numbers stay valid while a plan is edited. A Plan is not safe
// for concurrent use; the runner serialises access to the file.
type Plan struct {
	Path  string
	Title string
	// Phases in file order.
	Phases []*Phase
	// Items are the work items of file-based mode: every checkbox and, in a
	// .lean file, every line with a `sorry` placeholder.
	Items []*Task

	lines      []string
	finalNL    bool
	statusLine int // index of the **Status** line, -1 when absent
}

// Phase is one `### Phase N: title` section.
type Phase struct {
	Num    int
	Title  string
	Marker string // the heading's trailing [MARKER] text, "" when none
	Deps   []int
	Tasks  []*Task
	line   int
}

// Task is one checkbox (or, in a .lean file, one `sorry` placeholder).
type Task struct {
	Done   bool
	Text   string
	Indent int
	Sorry  bool
	line   int
}

var (
	// headingRe is a phase heading: "### Phase N" with N a whole number,
	// then the end of the line, a space, or a separator (":", "-", "–",
	// "—", or "." followed by a space), then the title. "### Phase 1.5"
	// and "### Phase 2a" do not match: phaseLikeRe catches them.
	headingRe = regexp.MustCompile(`^###\s+(?i:phase)\s+(\d+)(?:\s*[:\-–—]|\.(?:\s|$)|\s|$)\s*(.*?)\s*$`)
	// phaseLikeRe is a heading that looks like a phase heading: a level-3
	// heading whose text starts with the word "phase" ("### Phase Two"),
	// or a heading of any level with "phase" and a number ("## Phase 1",
	// "#### Phase -1"). "## Phase overview" is an ordinary section.
	phaseLikeRe = regexp.MustCompile(`^(?:###\s*(?i:phase)\b|#{1,6}\s*(?i:phase)\s*[-+]?\d)`)
	sectionRe   = regexp.MustCompile(`^#{1,3}\s`)
	markerRe    = regexp.MustCompile(`\s*\[(COMPLETE|IN PROGRESS|NOT STARTED|PARTIAL|BLOCKED|SKIPPED)\]\s*$`)
	checkboxRe  = regexp.MustCompile(`^(\s*)[-*+]\s+\[([ xX])\]\s*(.*)$`)
	dependsRe   = regexp.MustCompile(`(?i)^\s*(?:[-*+]\s+)?\**\s*(?:depends\s+on|dependencies)\s*\**\s*:\s*\**\s*(.*)$`)
	numberRe    = regexp.MustCompile(`\d+`)
	statusRe    = regexp.MustCompile(`^(\s*(?:[-*+]\s+)?\*\*Status\*\*\s*:\s*)(.*?)\s*$`)
	sorryRe     = regexp.MustCompile(`\bsorry\b`)
	fenceRe     = regexp.MustCompile("^\\s*(```|~~~)")
)

// depSepRe splits the value of a dependency line into its words.
var depSepRe = regexp.MustCompile(`[\s,;&]+`)

// rangeRe is a range of phases in a dependency line: "1-5" (seed 003's
// "**Dependencies**: Phase 1-5 complete").
var rangeRe = regexp.MustCompile(`^(\d+)[-–—](\d+)$`)

// maxDepRange bounds the phases of one range ("1-99999999" is a typo).
const maxDepRange = 1000

// doneWords end a dependency list: what follows is a remark ("Phase 6
// complete (testing relies on it)").
var doneWords = map[string]bool{"complete": true, "completed": true, "done": true, "finished": true, "✅": true}

// parseDeps reads the value of a `Depends on:` line: phase numbers or
// ranges, each with or without the word "Phase" ("Phase 1, Phase 3",
// "Phases 1 and 3", "[1, 3]", "#2", "Phase 1-5"), then possibly a remark
// that starts with "complete" or "done" ("Phase 1-5 complete ✅"); or
// "none" or "[]" for no dependencies. Anything else ("phase one", "the
// parser") returns why it is not a list of phases, rather than being taken
// for no dependency at all.
func parseDeps(value string) (deps []int, msg string) {
	value = strings.Trim(strings.TrimSpace(value), "*_`. ")
	if strings.EqualFold(value, "none") || strings.Join(strings.Fields(value), "") == "[]" {
		return nil, ""
	}
	words := depSepRe.Split(strings.NewReplacer("[", " ", "]", " ", "(", " ", ")", " ").Replace(value), -1)
words:
	for _, w := range words {
		w = strings.TrimPrefix(strings.Trim(w, "*_`."), "#")
		switch lw := strings.ToLower(w); {
		case len(deps) > 0 && doneWords[lw]:
			break words
		case rangeRe.MatchString(w):
			m := rangeRe.FindStringSubmatch(w)
			from, err1 := strconv.Atoi(m[1])
			to, err2 := strconv.Atoi(m[2])
			if err1 != nil || err2 != nil || from > to || to-from >= maxDepRange {
				return nil, "not a range of phases: " + w
			}
			for n := from; n <= to; n++ {
				deps = append(deps, n)
			}
		case lw == "" || lw == "phase" || lw == "phases" || lw == "and":
		case numberRe.FindString(w) == w:
			n, err := strconv.Atoi(w)
			if err != nil {
				return nil, "dependency out of range: " + w
			}
			deps = append(deps, n)
		default:
			return nil, fmt.Sprintf("%q is not a phase number (write \"Depends on: Phase 1, Phase 3\", or \"none\")", w)
		}
	}
	if len(deps) == 0 {
		return nil, `it names no phase (write "Depends on: Phase 1, Phase 3", or "none")`
	}
	return deps, ""
}

// ParsePlan parses data, the content of the plan at path. In file mode the
// plan needs no phases: its work items are its checkboxes (and `sorry`
// placeholders of a .lean file). In plan mode it needs at least one phase,
// unique phase numbers, dependencies on existing phases and at least one
// task in every phase not marked [COMPLETE]; otherwise the error is a
// *PlanError. In both modes, every heading that looks like a phase heading
// but does not parse ("### Phase Two", "### Phase 1.5", "## Phase 3") is a
// *PlanError with its line; all of them are returned, joined.
func ParsePlan(path string, data []byte, fileMode bool) (*Plan, error) {
	text := string(data)
	p := &Plan{Path: path, statusLine: -1, finalNL: strings.HasSuffix(text, "\n")}
	if p.finalNL {
		text = text[:len(text)-1]
	}
	p.lines = strings.Split(text, "\n")
	lean := strings.EqualFold(filepath.Ext(path), ".lean")

	var cur *Phase
	inFence := false
	seen := map[int]int{}
	var headingErrs []error
	for i, line := range p.lines {
		if fenceRe.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if p.Title == "" && strings.HasPrefix(line, "# ") {
			p.Title = strings.TrimSpace(line[2:])
			if t, ok := strings.CutPrefix(p.Title, "Plan:"); ok && strings.TrimSpace(t) != "" {
				p.Title = strings.TrimSpace(t)
			}
		}
		if m := headingRe.FindStringSubmatch(line); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				headingErrs = append(headingErrs, &PlanError{Path: path, Line: i + 1, Msg: "phase number out of range: " + m[1]})
				cur = nil
				continue
			}
			if prev, ok := seen[n]; ok {
				return nil, &PlanError{Path: path, Line: i + 1, Msg: fmt.Sprintf("duplicate %s (first at line %d)", phaseName(n), prev)}
			}
			seen[n] = i + 1
			title, marker := splitMarker(m[2])
			cur = &Phase{Num: n, Title: title, Marker: marker, line: i}
			p.Phases = append(p.Phases, cur)
			continue
		}
		if phaseLikeRe.MatchString(line) {
			headingErrs = append(headingErrs, &PlanError{Path: path, Line: i + 1,
				Msg: fmt.Sprintf("malformed phase heading %q: want \"### Phase N: title\" with N a whole number", strings.TrimSpace(line))})
			cur = nil
			continue
		}
		if sectionRe.MatchString(line) {
			cur = nil
			continue
		}
		if cur == nil && p.statusLine < 0 && len(p.Phases) == 0 {
			if statusRe.MatchString(line) {
				p.statusLine = i
				continue
			}
		}
		if m := checkboxRe.FindStringSubmatch(line); m != nil {
			t := &Task{Done: m[2] != " ", Text: strings.TrimSpace(m[3]), Indent: len(m[1]), line: i}
			p.Items = append(p.Items, t)
			if cur != nil {
				cur.Tasks = append(cur.Tasks, t)
			}
			continue
		}
		if lean && sorryRe.MatchString(stripLeanComment(line)) {
			p.Items = append(p.Items, &Task{Text: strings.TrimSpace(line), Sorry: true, line: i})
			continue
		}
		if cur != nil {
			if m := dependsRe.FindStringSubmatch(line); m != nil {
				deps, msg := parseDeps(m[1])
				if msg != "" {
					headingErrs = append(headingErrs, &PlanError{Path: path, Line: i + 1,
						Msg: fmt.Sprintf("malformed dependency line %q: %s", strings.TrimSpace(line), msg)})
					continue
				}
				for _, n := range deps {
					if !slices.Contains(cur.Deps, n) {
						cur.Deps = append(cur.Deps, n)
					}
				}
			}
		}
	}
	if len(headingErrs) > 0 {
		return nil, errors.Join(headingErrs...)
	}
	if fileMode {
		return p, nil
	}
	if len(p.Phases) == 0 {
		return nil, &PlanError{Path: path, Msg: "no phases: expected headings like \"### Phase 1: title\""}
	}
	for _, ph := range p.Phases {
		for _, d := range ph.Deps {
			switch {
			case d == ph.Num:
				return nil, &PlanError{Path: path, Line: ph.line + 1, Msg: phaseName(ph.Num) + " depends on itself"}
			case seen[d] == 0:
				return nil, &PlanError{Path: path, Line: ph.line + 1, Msg: fmt.Sprintf("%s depends on %s, which does not exist", phaseName(ph.Num), phaseName(d))}
			}
		}
	}
	for _, ph := range p.Phases {
		if len(ph.Tasks) == 0 && !ph.Marked() {
			return nil, &PlanError{Path: path, Line: ph.line + 1,
				Msg: ph.Name() + " has no tasks: add \"- [ ] task\" lines under it (or mark it [COMPLETE])"}
		}
	}
	return p, nil
}

// splitMarker splits a heading's text into its title and its first
// trailing [MARKER] ("" when none); every trailing marker is dropped from
// the title.
func splitMarker(text string) (title, marker string) {
	for {
		mm := markerRe.FindStringSubmatchIndex(text)
		if mm == nil {
			break
		}
		if marker == "" {
			marker = text[mm[2]:mm[3]]
		}
		text = text[:mm[0]]
	}
	return strings.TrimSpace(text), marker
}

// stripLeanComment drops a Lean line comment, so that `-- sorry` is no
// placeholder.
func stripLeanComment(line string) string {
	if i := strings.Index(line, "--"); i >= 0 {
		return line[:i]
	}
	return line
}

// Bytes returns the plan's current content.
func (p *Plan) Bytes() []byte {
	var b bytes.Buffer
	for i, l := range p.lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	if p.finalNL {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Phase returns the phase numbered n, or nil.
func (p *Plan) Phase(n int) *Phase {
	for _, ph := range p.Phases {
		if ph.Num == n {
			return ph
		}
	}
	return nil
}

// Complete reports whether every phase is complete.
func (p *Plan) Complete() bool {
	for _, ph := range p.Phases {
		if !ph.Complete() {
			return false
		}
	}
	return true
}

// Split returns the complete and the remaining phases, in file order.
func (p *Plan) Split() (complete, remaining []*Phase) {
	for _, ph := range p.Phases {
		if ph.Complete() {
			complete = append(complete, ph)
		} else {
			remaining = append(remaining, ph)
		}
	}
	return complete, remaining
}

// OpenItems returns the items of file mode that are not done.
func (p *Plan) OpenItems() []*Task {
	var open []*Task
	for _, t := range p.Items {
		if !t.Done {
			open = append(open, t)
		}
	}
	return open
}

// Check marks t done: its checkbox becomes [x], or its `sorry` becomes
// `trivial` (the simulated proof of file mode). It reports whether the
// line changed.
func (p *Plan) Check(t *Task) bool {
	if t.Done {
		return false
	}
	line := p.lines[t.line]
	if t.Sorry {
		loc := sorryRe.FindStringIndex(stripLeanComment(line))
		if loc == nil {
			return false
		}
		p.lines[t.line] = line[:loc[0]] + "trivial" + line[loc[1]:]
	} else {
		i := strings.Index(line, "[ ]")
		if i < 0 {
			return false
		}
		p.lines[t.line] = line[:i] + "[x]" + line[i+3:]
	}
	t.Done = true
	return true
}

// SetMarker replaces the trailing [MARKER] of ph's heading with [marker]
// (or removes it when marker is ""). It reports whether the line changed.
func (p *Plan) SetMarker(ph *Phase, marker string) bool {
	if ph.Marker == marker {
		return false
	}
	line := strings.TrimRight(p.lines[ph.line], " \t")
	for {
		loc := markerRe.FindStringIndex(line)
		if loc == nil {
			break
		}
		line = line[:loc[0]]
	}
	if marker != "" {
		line += " [" + marker + "]"
	}
	p.lines[ph.line] = line
	ph.Marker = marker
	return true
}

// Status returns the value of the plan's **Status** line without brackets,
// and whether the plan has one.
func (p *Plan) Status() (string, bool) {
	if p.statusLine < 0 {
		return "", false
	}
	m := statusRe.FindStringSubmatch(p.lines[p.statusLine])
	return strings.Trim(m[2], "[] "), true
}

// started reports whether work on the plan has begun: a phase is marked
// [COMPLETE] or a task is checked.
func (p *Plan) started() bool {
	for _, ph := range p.Phases {
		if strings.EqualFold(ph.Marker, markerComplete) {
			return true
		}
		for _, t := range ph.Tasks {
			if t.Done {
				return true
			}
		}
	}
	return false
}

// SetStatus sets the value of the **Status** line, keeping its brackets if
// it had them. It reports whether the line changed.
func (p *Plan) SetStatus(value string) bool {
	if p.statusLine < 0 {
		return false
	}
	m := statusRe.FindStringSubmatch(p.lines[p.statusLine])
	v := value
	if strings.HasPrefix(m[2], "[") {
		v = "[" + value + "]"
	}
	line := m[1] + v
	if line == p.lines[p.statusLine] {
		return false
	}
	p.lines[p.statusLine] = line
	return true
}

// Complete reports whether the phase has no unchecked task. ParsePlan
// refuses a phase without tasks unless it is marked [COMPLETE].
func (ph *Phase) Complete() bool { return ph.Open() == 0 }

// Open counts the unchecked tasks.
func (ph *Phase) Open() int {
	n := 0
	for _, t := range ph.Tasks {
		if !t.Done {
			n++
		}
	}
	return n
}

// Marked reports whether the heading carries [COMPLETE].
func (ph *Phase) Marked() bool { return ph.Marker == markerComplete }

// Name returns "Phase N".
func (ph *Phase) Name() string { return phaseName(ph.Num) }

func phaseName(n int) string { return "Phase " + strconv.Itoa(n) }

// phaseKey is the work_remaining spelling of a phase: "Phase_N".
func phaseKey(n int) string { return "Phase_" + strconv.Itoa(n) }

// parsePhaseRef reads "Phase 3", "Phase_3", "phase3" or "3".
func parsePhaseRef(s string) (int, bool) {
	s = strings.TrimSpace(strings.ToLower(s))
	s = strings.TrimPrefix(s, "phase")
	s = strings.TrimLeft(s, " _-")
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// Waves layers the phases that are not complete into waves (topological
// layers): a phase runs in the first wave after every incomplete phase it
// depends on; a dependency on a complete phase is satisfied. Phases keep
// file order within a wave. Dependencies that form a cycle give a
// *CycleError.
func (p *Plan) Waves() ([][]*Phase, error) {
	_, remaining := p.Split()
	open := make(map[int]bool, len(remaining))
	for _, ph := range remaining {
		open[ph.Num] = true
	}
	placed := make(map[int]bool, len(remaining))
	var waves [][]*Phase
	for len(placed) < len(remaining) {
		var wave []*Phase
		for _, ph := range remaining {
			if placed[ph.Num] {
				continue
			}
			ready := true
			for _, d := range ph.Deps {
				if open[d] && !placed[d] {
					ready = false
					break
				}
			}
			if ready {
				wave = append(wave, ph)
			}
		}
		if len(wave) == 0 {
			var stuck []int
			for _, ph := range remaining {
				if !placed[ph.Num] {
					stuck = append(stuck, ph.Num)
				}
			}
			return nil, &CycleError{Path: p.Path, Phases: stuck}
		}
		for _, ph := range wave {
			placed[ph.Num] = true
		}
		waves = append(waves, wave)
	}
	return waves, nil
}

// Recovery is the outcome of Block 1d on a plan: marker validation and
// recovery, checkbox consistency and the plan status.
type Recovery struct {
	// Total counts the phases, MarkedBefore and MarkedAfter those with a
	// [COMPLETE] marker before and after recovery.
	Total, MarkedBefore, MarkedAfter int
	// Recovered lists the phases that got their missing marker.
	Recovered []int
	// Warnings are checkbox inconsistencies.
	Warnings []string
	// AllComplete reports that every phase is complete.
	AllComplete bool
	// Status is the plan's status after recovery ("" without a status
	// line); StatusChanged reports that recovery set it.
	Status        string
	StatusChanged bool
}

// Recover runs phase marker validation and recovery on the plan, in place
// (seed 003, Block 1d): it counts the phases and those marked [COMPLETE];
// adds " [COMPLETE]" to the heading of every unmarked phase whose tasks are
// all checked; verifies checkbox consistency (a phase marked [COMPLETE] with
// unchecked tasks, a checked task with an unchecked sub-task, a plan status
// of COMPLETE with phases incomplete); and sets the plan status to COMPLETE
// when every phase is complete. It is idempotent: a second run changes
// nothing and recovers nothing.
func (p *Plan) Recover() Recovery {
	rec := Recovery{Total: len(p.Phases)}
	for _, ph := range p.Phases {
		if ph.Marked() {
			rec.MarkedBefore++
			continue
		}
		if ph.Complete() {
			p.SetMarker(ph, markerComplete)
			rec.Recovered = append(rec.Recovered, ph.Num)
		}
	}
	rec.AllComplete = true
	for _, ph := range p.Phases {
		if ph.Marked() {
			rec.MarkedAfter++
		}
		if open := ph.Open(); open > 0 {
			rec.AllComplete = false
			if ph.Marked() {
				rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s is marked [COMPLETE] but has %d unchecked task(s)", ph.Name(), open))
			}
		}
		for i, t := range ph.Tasks {
			if !t.Done {
				continue
			}
			for _, c := range ph.Tasks[i+1:] {
				if c.Indent <= t.Indent {
					break
				}
				if !c.Done {
					rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s: task %q is checked but its sub-task %q is not", ph.Name(), t.Text, c.Text))
					break
				}
			}
		}
	}
	if status, ok := p.Status(); ok {
		if rec.AllComplete {
			rec.StatusChanged = p.SetStatus(markerComplete)
			status = markerComplete
		} else if strings.EqualFold(status, markerComplete) {
			rec.Warnings = append(rec.Warnings, "plan status is COMPLETE but some phases are incomplete")
		} else if p.started() && !strings.EqualFold(status, markerInProgress) && !strings.EqualFold(status, "BLOCKED") {
			rec.StatusChanged = p.SetStatus(markerInProgress)
			status = markerInProgress
		}
		rec.Status = status
	}
	return rec
}
