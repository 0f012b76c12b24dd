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
