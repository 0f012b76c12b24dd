package iterate

import (
	"reflect"
	"testing"
	"time"

	"github.com/refine-go/refine/budget"
)

// TestAddUsage guards that addUsage, the engine's in-place sum of usages,
// is budget.Usage.Add: every field of Usage is added, so that a field
// added to Usage later is not silently dropped from what an iteration
// spends, the session's totals and the estimate of the next iteration.
// Mutation caught: a field left out of addUsage (each field is set alone
// in turn, with a distinct value).
func TestAddUsage(t *testing.T) {
	typ := reflect.TypeFor[budget.Usage]()
	for i := range typ.NumField() {
		var u, v budget.Usage
		set := func(x *budget.Usage, n int64) {
			f := reflect.ValueOf(x).Elem().Field(i)
			switch f.Kind() {
			case reflect.Int, reflect.Int64:
				f.SetInt(n)
			case reflect.Float64:
				f.SetFloat(float64(n) + 0.5)
			default:
				t.Fatalf("field %s: kind %s: teach this test (and addUsage) to add it", typ.Field(i).Name, f.Kind())
			}
		}
		set(&u, 3)
		set(&v, 40)
		want := u.Add(v)
		got := u
		addUsage(&got, &v)
		if got != want {
			t.Errorf("field %s: addUsage gives %+v, Usage.Add %+v", typ.Field(i).Name, got, want)
		}
	}
	all := budget.Usage{Iterations: 1, Tokens: 2, Cost: 0.25, Wall: time.Second, Calls: 3,
		InputTokens: 4, OutputTokens: 5, CacheReadTokens: 6, CacheWriteTokens: 7}
	got := all
	addUsage(&got, &all)
	if want := all.Add(all); got != want {
		t.Errorf("addUsage gives %+v, Usage.Add %+v", got, want)
	}
}
