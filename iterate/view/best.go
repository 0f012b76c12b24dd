package view

import (
	"encoding/json"

	"github.com/refine-go/refine/checkpoint"
)

// keptBest is the best state the engine keeps (iterate.WithKeepBest), as
// its record in a checkpoint names it: the iteration Result.Best.Iteration
// reports, by the loop's own scorer.
type keptBest struct {
	Iteration  int    `json:"iteration"`
	Generation uint64 `json:"generation"`
}

// bestOf returns the best state the engine kept in c's record, nil when
// the loop keeps none (no WithKeepBest, or no state assessed yet).
//
// iterate.Report does not carry it: the engine's record is read here for
// it alone. History.BestIteration is not it: that tracks the assessments'
// Score, whatever scorer WithKeepBest was given.
func bestOf(c *checkpoint.Checkpoint) *keptBest {
	var d struct {
		Best *keptBest `json:"best"`
	}
	if len(c.Engine) == 0 || json.Unmarshal(c.Engine, &d) != nil {
		return nil
	}
	return d.Best
}
