// Package jsonfloat reads the floats of the engine's saved records, which
// may not be finite: JSON has no number for NaN and the infinities, so the
// engine writes them as the strings "NaN", "+Inf" and "-Inf" (as
// strconv.FormatFloat spells them, with the sign of +Inf explicit), and
// every finite value as encoding/json writes a float64.
//
// A type whose fields are such floats decodes them through [Ref] and
// [MapRef] in its UnmarshalJSON: it decodes into a struct that embeds a
// pointer to the type's fields (a type without its methods) and shadows
// each float field with a Ref to it under the same JSON name, which
// encoding/json prefers to the embedded field of that name.
package jsonfloat

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
)

// The encodings of the non-finite floats, quotes included.
const (
	NaN    = `"NaN"`
	PosInf = `"+Inf"`
	NegInf = `"-Inf"`
)

// Append appends the encoding of a non-finite f (NaN, +Inf or -Inf) to b.
func Append(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, NaN...)
	case f > 0:
		return append(b, PosInf...)
	}
	return append(b, NegInf...)
}

// Parse decodes the JSON value data, a number or one of the strings
// "NaN", "+Inf" and "-Inf", as a float64. Any other value is an error, as
// encoding/json reports it for a float64.
func Parse(data []byte) (float64, error) {
	switch string(data) {
	case NaN:
		return math.NaN(), nil
	case PosInf:
		return math.Inf(1), nil
	case NegInf:
		return math.Inf(-1), nil
	}
	if len(data) == 0 {
		return 0, &json.UnmarshalTypeError{Value: "nothing", Type: float64Type}
	}
	var kind string
	switch c := data[0]; {
	case c == '-' || '0' <= c && c <= '9':
		f, err := strconv.ParseFloat(string(data), 64)
		if err == nil {
			return f, nil
		}
		kind = "number " + string(data) // out of range, as encoding/json says it
	case c == '"':
		kind = "string"
	case c == 't' || c == 'f':
		kind = "bool"
	case c == '{':
		kind = "object"
	case c == '[':
		kind = "array"
	default:
		kind = string(data)
	}
	return 0, &json.UnmarshalTypeError{Value: kind, Type: float64Type}
}

var float64Type = reflect.TypeFor[float64]()

// Ref decodes a float into *F (see [Parse]); null leaves it as it is, as
// encoding/json does.
type Ref struct{ F *float64 }

// UnmarshalJSON decodes data into *r.F.
func (r Ref) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	f, err := Parse(data)
	if err != nil {
		return err
	}
	*r.F = f
	return nil
}

// MapRef decodes an object of floats into *M as encoding/json decodes a
// map[string]float64: null sets it to nil; an object adds its members to
// the map, made when nil.
type MapRef struct{ M *map[string]float64 }

// UnmarshalJSON decodes data into *r.M.
func (r MapRef) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*r.M = nil
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if *r.M == nil {
		*r.M = make(map[string]float64, len(raw))
	}
	for k, v := range raw {
		f, err := Parse(v)
		if err != nil {
			return err
		}
		(*r.M)[k] = f
	}
	return nil
}
