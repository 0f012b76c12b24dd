package iterate

import (
	"encoding/json"

	"github.com/refine-go/refine/checkpoint"
)

// JournalLen returns the number of tasks journaled in c's resume record.
func JournalLen(c *checkpoint.Checkpoint) int {
	var d engineData
	if err := json.Unmarshal(c.Engine, &d); err != nil {
		return -1
	}
	return len(d.Journal)
}

// JournaledTasks returns the iteration and index of every task journaled in
// c's resume record.
func JournaledTasks(c *checkpoint.Checkpoint) [][2]int {
	var d engineData
	if err := json.Unmarshal(c.Engine, &d); err != nil {
		return nil
	}
	out := make([][2]int, len(d.Journal))
	for i, e := range d.Journal {
		out[i] = [2]int{e.Iteration, e.Index}
	}
	return out
}

// JournalLinger is how long the journal's writer waits before its first
// save (journalLinger).
const JournalLinger = journalLinger
