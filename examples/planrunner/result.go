package main

import (
	"encoding/json"
	"io"
)

// jsonResult is the final result that --json prints on stdout.
type jsonResult struct {
	// Status is the engine's stop status ("converged", "stuck", ...),
	// "interrupted", "recovered" (--recover-only) or "error".
	Status string `json:"status"`
	Reason string `json:"reason"`
	// ExitCode is the program's exit code.
	ExitCode   int    `json:"exit_code"`
	Iterations int    `json:"iterations"`
	Plan       string `json:"plan,omitempty"`
	// WorkRemaining lists the remaining phases ("Phase_3") or items.
	WorkRemaining []string `json:"work_remaining"`
	Summary       string   `json:"summary,omitempty"`
	Usage         usage    `json:"usage"`
	// LastError is the last implementer error when every call failed.
	LastError string `json:"last_error,omitempty"`
}

// usage is what the implementer calls of a run (all its iterations,
// resumed ones too) used.
type usage struct {
	// Calls counts the implementer calls, Failed those that failed.
	Calls  int `json:"implementer_calls"`
	Failed int `json:"failed_calls"`
	// External and Local count the external calls and the local fallback
	// calls the implementers reported.
	External int   `json:"external_calls"`
	Local    int   `json:"local_calls"`
	Tokens   int64 `json:"tokens"`
}

// writeJSON prints res as one JSON object.
func writeJSON(w io.Writer, res *jsonResult) {
	if res.WorkRemaining == nil {
		res.WorkRemaining = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(res)
}

// callStats are the implementer calls of a run's iterations.
type callStats struct {
	usage
	lastErr string
}

// callsOf counts the implementer calls of the records (a blocked phase
// made none).
func callsOf(recs []IterationRecord) callStats {
	var c callStats
	for _, rec := range recs {
		for _, ph := range rec.Phases {
			if ph.Blocked {
				continue
			}
			c.Calls++
			c.External += ph.External
			c.Local += ph.Local
			c.Tokens += ph.Tokens
			if ph.Err != "" {
				c.Failed++
				c.lastErr = ph.Err
			}
		}
	}
	return c
}

// allFailed reports whether there were calls and every one failed.
func (c callStats) allFailed() bool { return c.Calls > 0 && c.Failed == c.Calls }
