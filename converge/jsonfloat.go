package converge

// This file decodes the records of a History whose floats are not finite:
// the engine saves a NaN or an infinite score, coverage, confidence or cost
// as the string "NaN", "+Inf" or "-Inf" (JSON has no number for them), and
// these methods read them back exactly.

import (
	"encoding/json"

	"github.com/refine-go/refine/internal/jsonfloat"
)

// UnmarshalJSON decodes a record as encoding/json would, also reading a
// float field (Coverage, Confidence, Score, a value of Scores, Cost) saved
// as "NaN", "+Inf" or "-Inf", as the engine saves the non-finite values
// (JSON has no number for them).
func (r *Record) UnmarshalJSON(data []byte) error {
	type fields Record // Record's fields, without this method
	v := struct {
		*fields
		Coverage   jsonfloat.Ref    `json:"coverage"`
		Confidence jsonfloat.Ref    `json:"confidence"`
		Score      jsonfloat.Ref    `json:"score"`
		Scores     jsonfloat.MapRef `json:"scores"`
		Cost       jsonfloat.Ref    `json:"cost"`
	}{
		(*fields)(r),
		jsonfloat.Ref{F: &r.Coverage}, jsonfloat.Ref{F: &r.Confidence}, jsonfloat.Ref{F: &r.Score},
		jsonfloat.MapRef{M: &r.Scores}, jsonfloat.Ref{F: &r.Cost},
	}
	return json.Unmarshal(data, &v)
}

// UnmarshalJSON decodes a history as encoding/json would, also reading
// BestScore and the Pending attempt's Cost saved as "NaN", "+Inf" or
// "-Inf" (see [Record.UnmarshalJSON]).
func (h *History) UnmarshalJSON(data []byte) error {
	type fields History // History's fields, without this method
	v := struct {
		*fields
		BestScore jsonfloat.Ref `json:"best_score"`
		Pending   attemptRef    `json:"pending"`
	}{(*fields)(h), jsonfloat.Ref{F: &h.BestScore}, attemptRef{&h.Pending}}
	return json.Unmarshal(data, &v)
}

// attemptRef decodes an Attempt into *a, with its Cost as [Record]'s. (A
// method of Attempt would be promoted to Record, which embeds it.)
type attemptRef struct{ a *Attempt }

func (r attemptRef) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v := struct {
		*Attempt
		Cost jsonfloat.Ref `json:"cost"`
	}{r.a, jsonfloat.Ref{F: &r.a.Cost}}
	return json.Unmarshal(data, &v)
}

// UnmarshalJSON decodes a criterion as encoding/json would, also reading
// Value and Threshold saved as "NaN", "+Inf" or "-Inf" (see
// [Record.UnmarshalJSON]).
func (c *Criterion) UnmarshalJSON(data []byte) error {
	type fields Criterion // Criterion's fields, without this method
	v := struct {
		*fields
		Value     jsonfloat.Ref `json:"value"`
		Threshold jsonfloat.Ref `json:"threshold"`
	}{(*fields)(c), jsonfloat.Ref{F: &c.Value}, jsonfloat.Ref{F: &c.Threshold}}
	return json.Unmarshal(data, &v)
}
