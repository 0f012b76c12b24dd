package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/refine-go/refine/budget"
)

// The formats of the AI CLI's output that agentloop reads (--ai-output).
const (
	// formatAuto sniffs the output: the first of Claude Code, Gemini CLI
	// and Codex whose format it matches, else plain text.
	formatAuto = "auto"
	// formatClaude is Claude Code's `claude -p --output-format json` (one
	// result object) or `--output-format stream-json` (JSON lines, the
	// last of them the result object).
	formatClaude = "claude"
	// formatCodex is Codex's `codex exec --json`: JSON lines of events,
	// each turn.completed carrying the turn's token usage.
	formatCodex = "codex"
	// formatGemini is Gemini CLI's `gemini -p ... --output-format json`:
	// one object with the response and stats per model.
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
	// Input and Output are the tokens the call read and wrote.
	Input, Output int64
	// Cost is what the call cost in US dollars, when the CLI says (HasCost).
	Cost    float64
	HasCost bool
}

// usage is the report as the budget's usage: input and output tokens, and
// the cost when the CLI reported one.
func (r aiReport) usage() budget.Usage {
	return budget.Usage{Tokens: r.Input + r.Output, InputTokens: r.Input, OutputTokens: r.Output, Cost: r.Cost}
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
	Type         string   `json:"type"`
	Subtype      string   `json:"subtype"`
	IsError      bool     `json:"is_error"`
	Result       string   `json:"result"`
	TotalCostUSD *float64 `json:"total_cost_usd"`
	Usage        *struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	} `json:"usage"`
}

// parseClaude reads the last result object of Claude Code's output: its
// cost (total_cost_usd) and its tokens, the input being the uncached
// input tokens plus those written to and read from the prompt cache.
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
		r := aiReport{Text: res.Result}
		if res.Usage != nil {
			u := res.Usage
			r.Input = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
			r.Output = u.OutputTokens
		}
		if res.TotalCostUSD != nil && *res.TotalCostUSD >= 0 {
			r.Cost, r.HasCost = *res.TotalCostUSD, true
		}
		return r, validReport(r)
	}
	return aiReport{}, false
}

// parseGemini reads Gemini CLI's JSON output: the response, and the tokens
// of every model in stats.models (input: prompt; output: candidates and
// thoughts). Gemini CLI reports no cost.
func parseGemini(out []byte) (aiReport, bool) {
	objs := jsonLines(out)
	if len(objs) != 1 {
		return aiReport{}, false
	}
	var stats struct {
		Models map[string]struct {
			Tokens struct {
				Prompt     int64 `json:"prompt"`
				Candidates int64 `json:"candidates"`
				Thoughts   int64 `json:"thoughts"`
			} `json:"tokens"`
		} `json:"models"`
	}
	if !field(objs[0], "stats", &stats) || stats.Models == nil {
		return aiReport{}, false
	}
	var r aiReport
	field(objs[0], "response", &r.Text)
	for _, m := range stats.Models {
		r.Input += m.Tokens.Prompt
		r.Output += m.Tokens.Candidates + m.Tokens.Thoughts
	}
	return r, validReport(r)
}

// parseCodex reads the events of `codex exec --json`: the usage of every
// turn.completed (input_tokens, cached ones included, and output_tokens)
// and the text of the last agent_message item. Codex reports no cost.
func parseCodex(out []byte) (aiReport, bool) {
	var r aiReport
	turns := 0
	for _, obj := range jsonLines(out) {
		var typ string
		field(obj, "type", &typ)
		switch typ {
		case "turn.completed":
			var u struct {
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			}
			if field(obj, "usage", &u) {
				r.Input += u.InputTokens
				r.Output += u.OutputTokens
				turns++
			}
		case "item.completed":
			var item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if field(obj, "item", &item) && item.Type == "agent_message" {
				r.Text = item.Text
			}
		}
	}
	return r, turns > 0 && validReport(r)
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
