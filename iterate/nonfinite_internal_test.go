package iterate

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/refine-go/refine/budget"
	"github.com/refine-go/refine/checkpoint"
	"github.com/refine-go/refine/converge"
)

// fillFloats sets every float64 that JSON saves in v (fields not tagged
// "-", through pointers, slices, arrays and maps, which it makes with one
// element) to f, and returns how many it set.
func fillFloats(v reflect.Value, f float64) int {
	switch v.Kind() {
	case reflect.Float64:
		v.SetFloat(f)
		return 1
	case reflect.Pointer:
		if v.Type().Elem().Kind() != reflect.Struct {
			return 0
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return fillFloats(v.Elem(), f)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0 // bytes
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		v.Set(s)
		return fillFloats(s.Index(0), f)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.Float64 {
			return 0
		}
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("k").Convert(v.Type().Key()), reflect.ValueOf(f))
		v.Set(m)
		return 1
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if !sf.IsExported() || strings.Split(sf.Tag.Get("json"), ",")[0] == "-" {
				continue
			}
			n += fillFloats(v.Field(i), f)
		}
		return n
	}
	return 0
}

// TestRecordEncoderNonFiniteRoundTrip (issue 28, item 5): every float of
// the engine's record (scores, coverage, confidence, costs, criteria,
// severities, the best scores, found by reflection, so that a float field
// added later is covered too) is encoded when NaN, +Inf or -Inf, as the
// string "NaN", "+Inf" or "-Inf", and decodes back exactly, by Resume's
// json.Unmarshal and by Inspect; the cached encodings of the window's
// records and of the best decode alike. Mutants caught: the encoder
// writing null, 0 or an error for a non-finite float; +Inf and -Inf
// swapped; any of the decoders (of Record, History and its Pending,
// Criterion, Gap, the usages, journal entries, the best) missing or
// shadowing the wrong field.
func TestRecordEncoderNonFiniteRoundTrip(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0.25} {
		var d engineData
		n := fillFloats(reflect.ValueOf(&d).Elem(), f)
		// The limits of budget extensions are budget.Limits, validated
		// finite (budget.New refuses a NaN or infinite cost and a warning
		// level outside [0, 1]): encoding/json writes them.
		d.Extensions = nil
		n -= fillFloats(reflect.ValueOf(&Extension{}).Elem(), f)
		// So are the limits of a question parked at them (WithParkAtLimit).
		d.Escalation.Parked.Limits = budget.Limits{}
		n -= fillFloats(reflect.ValueOf(&budget.Limits{}).Elem(), f)
		if n < 19 {
			t.Fatalf("only %d floats set", n)
		}
		d.History.Iteration = 1 // its record (iteration 0) final: cached
		e := &recordEncoder{}
		for save := range 2 { // the second from the cache
			data, err := e.encode(&d, 1)
			if err != nil {
				t.Fatalf("%v, save %d: %v", f, save, err)
			}
			if !math.IsInf(f, 0) && !math.IsNaN(f) {
				want, _ := json.Marshal(&d)
				if string(data) != string(want) {
					t.Fatalf("finite %v: encoding differs from json.Marshal's:\n got %s\nwant %s", f, data, want)
				}
			} else if got := strings.Count(string(data), `"`+strings.Trim(string(appendNonFinite(f)), `"`)+`"`); got != n {
				t.Errorf("%v: %d floats written as %s, want %d:\n%s", f, got, appendNonFinite(f), n, data)
			}
			var back engineData
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatalf("%v: decoding: %v", f, err)
			}
			opts := cmp.Options{cmpopts.EquateNaNs(), cmp.AllowUnexported(engineData{}, bestRecord{}, entry{}),
				cmpopts.IgnoreUnexported(converge.History{})}
			if diff := cmp.Diff(&d, &back, opts); diff != "" {
				t.Errorf("%v: decoded record differs (-saved +decoded):\n%s", f, diff)
			}
			rep, err := Inspect(&checkpoint.Checkpoint{Engine: data})
			if err != nil {
				t.Fatalf("%v: Inspect: %v", f, err)
			}
			want := *d.History
			want.Gaps = d.Gaps
			if diff := cmp.Diff(want, rep.History, opts); diff != "" {
				t.Errorf("%v: Inspect's history differs (-saved +inspected):\n%s", f, diff)
			}
		}
	}
}

func appendNonFinite(f float64) []byte { var j jsonBuf; j.float(f); return j.b }

// TestRecordDecodesAsJSON: the decoders of the records' floats decode
// what encoding/json writes as it would: into values already set
// (json.Unmarshal merges), null leaving a float as it is and setting a
// map to nil, and the errors of a value that is not a float.
func TestRecordDecodesAsJSON(t *testing.T) {
	r := converge.Record{Score: 0.5, Coverage: 0.1, Scores: map[string]float64{"a": 1}}
	if err := json.Unmarshal([]byte(`{"iteration":3,"score":null,"scores":{"b":"-Inf"},"cost":"+Inf"}`), &r); err != nil {
		t.Fatal(err)
	}
	want := converge.Record{Iteration: 3, Score: 0.5, Coverage: 0.1, Scores: map[string]float64{"a": 1, "b": math.Inf(-1)}}
	want.Cost = math.Inf(1)
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("merged record (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"scores":null}`), &r); err != nil || r.Scores != nil {
		t.Errorf("scores null: %v, %v", r.Scores, err)
	}
	for _, bad := range []string{`"nan"`, `"Inf"`, `"1"`, `true`, `{}`, `[]`, `1e400`} {
		var std struct{ Score float64 }
		err := json.Unmarshal([]byte(`{"score":`+bad+`}`), &converge.Record{})
		stdErr := json.Unmarshal([]byte(`{"score":`+bad+`}`), &std)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || stdErr == nil || te.Type.Kind() != reflect.Float64 {
			t.Errorf("score %s: %v (encoding/json: %v), want a type error", bad, err, stdErr)
		}
	}
}
