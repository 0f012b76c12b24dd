package gap

import (
	"encoding/json"

	"github.com/refine-go/refine/internal/jsonfloat"
)

// UnmarshalJSON decodes a gap as encoding/json would, also reading
// Severity and Relevance saved as "NaN", "+Inf" or "-Inf", as the engine
// saves the values that are not finite (JSON has no number for them).
func (g *Gap) UnmarshalJSON(data []byte) error {
	type fields Gap // Gap's fields, without this method
	v := struct {
		*fields
		Severity  jsonfloat.Ref `json:"severity"`
		Relevance jsonfloat.Ref `json:"relevance"`
	}{(*fields)(g), jsonfloat.Ref{F: &g.Severity}, jsonfloat.Ref{F: &g.Relevance}}
	return json.Unmarshal(data, &v)
}
