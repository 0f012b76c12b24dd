package gap

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAppendFixed2MatchesStrconv compares appendFixed2 with strconv over
// edge cases (ties, values just off a tie, out of range, NaN) and a seeded
// random sweep of ratios and counts.
func TestAppendFixed2MatchesStrconv(t *testing.T) {
	values := []float64{0, 0.001, 0.004999999, 0.005, 0.015, 0.025, 0.125, 0.175, 0.285, 0.375, 0.5, 0.695,
		0.699, 0.7, 0.1 + 0.6, 0.72, 0.845, 0.88, 0.995, 0.9999, 0.99999999, 1, 2, 17, 1234.5678, 1e9 - 0.005, 1e9, 1e12,
		-0.05, math.Copysign(0, -1), -1e-300, math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, math.Nextafter(0.005, 1), math.Nextafter(0.005, 0)}
	for i := 0; i <= 10000; i++ {
		values = append(values, float64(i)/10000, float64(i)*0.0005, float64(i)/1000+0.0005, float64(i%100)/float64(100+i))
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		values = append(values, r.Float64(), r.Float64()*1000, float64(r.IntN(1000))/float64(1+r.IntN(1000)))
	}
	for _, v := range values {
		want := strconv.FormatFloat(v, 'f', 2, 64)
		if got := string(appendFixed2([]byte("x"), v)); got != "x"+want {
			t.Fatalf("appendFixed2(%v) = %q, want %q", v, got, "x"+want)
		}
	}
}
