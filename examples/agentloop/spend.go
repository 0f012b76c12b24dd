package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/refine-go/refine/budget"
)

// The formats of the AI CLI's output that agentloop reads (--ai-output).
const (
	// formatAuto sniffs the output: the first of Claude Code, Gemini CLI
	// and Codex whose format it matches, else plain text.
	formatAuto = "auto"
	// formatClaude is Claude Code's `claude -p --output-format json` (one
	// result object) or `--output-format stream-json --verbose` (JSON
	// lines: the assistant's messages with their usage, then the result
	// object).
	formatClaude = "claude"
	// formatCodex is Codex's `codex exec --json`: JSON lines of events,
	// each turn.completed carrying the turn's token usage.
	formatCodex = "codex"
	// formatGemini is Gemini CLI's `gemini -p ... --output-format json`
	// (one object with the response and stats per model) or
	// `--output-format stream-json` (JSON lines of events, the last a
	// result with the run's stats).
	formatGemini = "gemini"
	// formatText reads nothing: the output is plain text.
	formatText = "text"
)

// outputFormats lists the values of --ai-output.
var outputFormats = []string{formatAuto, formatClaude, formatCodex, formatGemini, formatText}

// aiReport is what an AI CLI's output says about its call.
type aiReport struct {
	// Format is the format that matched (formatClaude, formatCodex,
	// formatGemini), or "" when none did: Text is then the raw output and
	// the other fields are zero.
	Format string
	// Text is the agent's answer: Claude's result, Gemini's response, the
	// last of Codex's agent messages; or the raw output.
	Text string
	// Input and Output are the tokens the call read and wrote; CacheRead
	// and CacheWrite the parts of Input read from and written to the
	// provider's prompt cache (Claude reports them).
	Input, Output         int64
	CacheRead, CacheWrite int64
	// Cost is what the call cost in US dollars, when the CLI says (HasCost).
	Cost    float64
	HasCost bool
	// Counted is true when Input, Output and Cost are the CLI's own count
	// of what the run spent, zero included (a run that never reached the
	// model); false when the output does not say (a Codex run stopped in
	// the middle of a turn, whose usage comes only at the turn's end).
	Counted bool
	// Reason is the CLI's own reason for a failure ("Not logged in ·
	// Please run /login", "API Error: ..."), "" when it gives none.
	Reason string
}

// usage is the report as the budget's usage: input and output tokens, and
// the cost when the CLI reported one.
func (r aiReport) usage() budget.Usage {
	return budget.Usage{Tokens: r.Input + r.Output, InputTokens: r.Input, OutputTokens: r.Output, Cost: r.Cost,
		CacheReadTokens: r.CacheRead, CacheWriteTokens: r.CacheWrite}
}

// String describes the report for the logs: "claude: 1,234 in, 56 out, $0.0123".
func (r aiReport) String() string {
	if r.Format == "" {
		return "plain text"
	}
	s := fmt.Sprintf("%s: %d in, %d out", r.Format, r.Input, r.Output)
	if r.HasCost {
		s += fmt.Sprintf(", $%.4f", r.Cost)
	}
	return s
}

// parseOutput reads the output of an AI CLI in format (one of
// outputFormats; "" is formatAuto). Output that does not match the format
// is kept as raw text: the report's Format is then "".
func parseOutput(format string, out []byte) aiReport {
	parsers := map[string]func([]byte) (aiReport, bool){
		formatClaude: parseClaude,
		formatGemini: parseGemini,
		formatCodex:  parseCodex,
	}
	var order []string
	switch format {
	case "", formatAuto:
		order = []string{formatClaude, formatGemini, formatCodex}
	case formatText:
	default:
		order = []string{format}
	}
	for _, f := range order {
		if r, ok := parsers[f](out); ok {
			r.Format = f
			return r
		}
	}
	return aiReport{Text: string(out)}
}

// maxReason bounds the length of a CLI's reason for a failure.
const maxReason = 300

// oneLine makes s a reason: its lines joined, its spaces squeezed, cut at
// maxReason bytes (on a rune boundary).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// stderrReason returns the reason a CLI gives on its standard error for a
// failure: the message of a JSON error object ({"error": {"message": ...}},
// Gemini CLI's in --output-format json), else the last line that is not
// blank.
func stderrReason(stderr []byte) string {
	for _, obj := range jsonLines(stderr) {
		var e struct {
			Message string `json:"message"`
		}
		if field(obj, "error", &e) && e.Message != "" {
			return oneLine(e.Message)
		}
	}
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	return oneLine(lines[len(lines)-1])
}

// jsonLines returns the JSON objects of out: the whole output when it is
// one object (or ends with one, pretty-printed, after lines of text such as
// a CLI's own notices), else each line that is one (other lines are
// skipped).
func jsonLines(out []byte) []map[string]json.RawMessage {
	var whole map[string]json.RawMessage
	trimmed := bytes.TrimSpace(out)
	if json.Unmarshal(trimmed, &whole) == nil {
		return []map[string]json.RawMessage{whole}
	}
	// Text, then one object over several lines: the object starts on the
	// first line that opens one and spans the rest.
	if bytes.HasSuffix(trimmed, []byte("}")) {
		for off := 0; off < len(trimmed); {
			i := bytes.Index(trimmed[off:], []byte("\n{"))
			if i < 0 {
				break
			}
			off += i + 1
			// One object per line is JSON lines, read below.
			if bytes.Contains(trimmed[off:], []byte("\n")) && json.Unmarshal(trimmed[off:], &whole) == nil {
				return []map[string]json.RawMessage{whole}
			}
		}
	}
	var objs []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), len(out)+1)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(line, &obj) == nil {
			objs = append(objs, obj)
		}
	}
	return objs
}

// field decodes obj[key] into v, reporting whether it was there and of
// v's type.
func field(obj map[string]json.RawMessage, key string, v any) bool {
	raw, ok := obj[key]
	return ok && json.Unmarshal(raw, v) == nil
}

// claudeResult is the result object of Claude Code's JSON output.
type claudeResult struct {
	Type         string       `json:"type"`
	Subtype      string       `json:"subtype"`
	IsError      bool         `json:"is_error"`
	Result       string       `json:"result"`
	Errors       []string     `json:"errors"`
	TotalCostUSD *float64     `json:"total_cost_usd"`
	Usage        *claudeUsage `json:"usage"`
}

// claudeUsage is the usage of Claude's messages and results.
type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// input is the uncached input plus the input written to and read from the
// prompt cache.
func (u claudeUsage) input() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// parseClaude reads Claude Code's output. Its last result object gives
// the run's cost (total_cost_usd) and tokens, and its reason when it is an
// error (is_error: the result's text). Without one (a stream-json run
// interrupted or timed out before its end), the run spent what its
// assistant messages reported: each message counted once, though
// stream-json prints it once per content block, with the largest count
// any of its lines gives.
func parseClaude(out []byte) (aiReport, bool) {
	objs := jsonLines(out)
	for i := len(objs) - 1; i >= 0; i-- {
		var typ string
		if !field(objs[i], "type", &typ) || typ != "result" {
			continue
		}
		raw, _ := json.Marshal(objs[i])
		var res claudeResult
		if json.Unmarshal(raw, &res) != nil || (res.TotalCostUSD == nil && res.Usage == nil) {
			continue
		}
		r := aiReport{Text: res.Result, Counted: true}
		if res.Usage != nil {
			r.Input, r.Output = res.Usage.input(), res.Usage.OutputTokens
			r.CacheRead, r.CacheWrite = res.Usage.CacheReadInputTokens, res.Usage.CacheCreationInputTokens
		}
		if res.TotalCostUSD != nil && *res.TotalCostUSD >= 0 {
			r.Cost, r.HasCost = *res.TotalCostUSD, true
		}
		if res.IsError {
			r.Reason = oneLine(res.Result)
			if r.Reason == "" {
				r.Reason = oneLine(res.Subtype + " " + strings.Join(res.Errors, "; "))
			}
		}
		return r, validReport(r)
	}
	// No result: the assistant messages' usage.
	seen := map[string]claudeUsage{}
	var order []string
	var r aiReport
	for _, obj := range objs {
		var typ string
		var msg struct {
			ID      string       `json:"id"`
			Usage   *claudeUsage `json:"usage"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if !field(obj, "type", &typ) || typ != "assistant" || !field(obj, "message", &msg) || msg.Usage == nil {
			continue
		}
		for _, c := range msg.Content {
			if c.Type == "text" && c.Text != "" {
				r.Text = c.Text
			}
		}
		id := msg.ID
		if id == "" { // no id to tell its lines apart: each line a message
			id = strconv.Itoa(len(order))
		}
		u, ok := seen[id]
		if !ok {
			order = append(order, id)
		}
		seen[id] = claudeUsage{max(u.InputTokens, msg.Usage.InputTokens), max(u.CacheCreationInputTokens, msg.Usage.CacheCreationInputTokens),
			max(u.CacheReadInputTokens, msg.Usage.CacheReadInputTokens), max(u.OutputTokens, msg.Usage.OutputTokens)}
	}
	if len(order) == 0 {
		return aiReport{}, false
	}
	for _, id := range order {
		r.Input += seen[id].input()
		r.CacheRead += seen[id].CacheReadInputTokens
		r.CacheWrite += seen[id].CacheCreationInputTokens
		r.Output += seen[id].OutputTokens
	}
	r.Counted = true
	return r, validReport(r)
}

// parseGemini reads Gemini CLI's output. Gemini CLI reports no cost.
//
// In --output-format json, one object: the response and the tokens of
// every model in stats.models (input: prompt and tool, the tool-use
// prompt; output: candidates and thoughts), or an error object
// ({"error": {"message": ...}}) with no stats: the run spent nothing that
// it reports.
//
// In --output-format stream-json, JSON lines of events: the assistant's
// messages (the answer is their text since the last user message, deltas
// joined), error events, and a result event with the run's stats
// (input_tokens; output: the rest of total_tokens, thoughts and tool
// included) and, when it failed, its error.
func parseGemini(out []byte) (aiReport, bool) {
	objs := jsonLines(out)
	if len(objs) == 1 {
		if r, ok := parseGeminiJSON(objs[0]); ok {
			return r, true
		}
	}
	return parseGeminiStream(objs)
}

func parseGeminiJSON(obj map[string]json.RawMessage) (aiReport, bool) {
	var e struct {
		Message string `json:"message"`
	}
	if _, hasStats := obj["stats"]; !hasStats && field(obj, "error", &e) && e.Message != "" {
		return aiReport{Counted: true, Reason: oneLine(e.Message)}, true
	}
	var stats struct {
		Models map[string]struct {
			Tokens struct {
				Prompt     int64 `json:"prompt"`
				Candidates int64 `json:"candidates"`
				Thoughts   int64 `json:"thoughts"`
				Tool       int64 `json:"tool"`
			} `json:"tokens"`
		} `json:"models"`
	}
	if !field(obj, "stats", &stats) || stats.Models == nil {
		return aiReport{}, false
	}
	r := aiReport{Counted: true}
	field(obj, "response", &r.Text)
	if field(obj, "error", &e) {
		r.Reason = oneLine(e.Message)
	}
	for _, m := range stats.Models {
		r.Input += m.Tokens.Prompt + m.Tokens.Tool
		r.Output += m.Tokens.Candidates + m.Tokens.Thoughts
	}
	return r, validReport(r)
}

func parseGeminiStream(objs []map[string]json.RawMessage) (aiReport, bool) {
	var r aiReport
	var text strings.Builder
	started := false
	for _, obj := range objs {
		var typ string
		field(obj, "type", &typ)
		switch typ {
		case "init":
			var model string
			started = started || field(obj, "model", &model)
		case "message":
			var m struct {
				Role    string `json:"role"`
				Content string `json:"content"`
				Delta   bool   `json:"delta"`
			}
			if !field(obj, "message", new(json.RawMessage)) && field(obj, "role", &m.Role) {
				field(obj, "content", &m.Content)
				field(obj, "delta", &m.Delta)
				switch {
				case m.Role == "user":
					text.Reset()
				case m.Role == "assistant" && !m.Delta && text.Len() > 0:
					text.WriteString("\n")
					fallthrough
				case m.Role == "assistant":
					text.WriteString(m.Content)
				}
			}
		case "error":
			var e struct {
				Severity string `json:"severity"`
				Message  string `json:"message"`
			}
			if field(obj, "severity", &e.Severity) && field(obj, "message", &e.Message) && e.Severity == "error" {
				r.Reason = oneLine(e.Message)
			}
		case "result":
			var st struct {
				TotalTokens  int64 `json:"total_tokens"`
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			}
			var status string
			if !field(obj, "status", &status) || !field(obj, "stats", &st) {
				continue
			}
			var e struct {
				Message string `json:"message"`
			}
			if field(obj, "error", &e) && e.Message != "" {
				r.Reason = oneLine(e.Message)
			}
			r.Input = st.InputTokens
			r.Output = max(st.OutputTokens, st.TotalTokens-st.InputTokens)
			r.Counted = true
		}
	}
	if !started && !r.Counted {
		return aiReport{}, false
	}
	// Started but no result: the run was stopped, or failed, before its
	// end; stream-json reports no usage until then.
	r.Text = text.String()
	return r, validReport(r)
}

// parseCodex reads the events of `codex exec --json`: the usage of every
// turn.completed (input_tokens, cached ones included, and output_tokens),
// the text of the last agent_message item, and the message of the last
// error or turn.failed event. Codex reports no cost, and a turn's usage
// only at its end: the usage of a run stopped in the middle of a turn is
// unknown (Counted is false), unless the turn has had nothing back from
// the model (no item completed: Codex offline, waiting for the network),
// when it spent nothing.
func parseCodex(out []byte) (aiReport, bool) {
	var r aiReport
	events, items := 0, false
	open := false // a turn started and not ended
	for _, obj := range jsonLines(out) {
		var typ string
		field(obj, "type", &typ)
		switch typ {
		case "thread.started", "turn.started":
			events++
			open = open || typ == "turn.started"
		case "turn.completed":
			var u struct {
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			}
			if field(obj, "usage", &u) {
				r.Input += u.InputTokens
				r.Output += u.OutputTokens
				events++
				open, items = false, false
			}
		case "turn.failed":
			var e struct {
				Message string `json:"message"`
			}
			if field(obj, "error", &e) {
				r.Reason = oneLine(e.Message)
				events++
			}
		case "error":
			var msg string
			if field(obj, "message", &msg) {
				r.Reason = oneLine(msg)
				events++
			}
		case "item.completed":
			var item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if field(obj, "item", &item) {
				items = true
				if item.Type == "agent_message" {
					r.Text = item.Text
				}
			}
		}
	}
	r.Counted = !(open && items)
	return r, events > 0 && validReport(r)
}

// validReport rejects negative counts, which no CLI reports.
func validReport(r aiReport) bool { return r.Input >= 0 && r.Output >= 0 }

// validOutputFormat returns a usage error for a value --ai-output does not
// know.
func validOutputFormat(name, v string) error {
	for _, f := range outputFormats {
		if v == f {
			return nil
		}
	}
	return usagef("%s: %q is not an output format (%s)", name, v, strings.Join(outputFormats, ", "))
}
