package gap

import (
	"math"
	"strconv"
)

// appendFixed2 appends v with two decimals exactly as
// strconv.AppendFloat(b, v, 'f', 2, 64) does, several times faster for the
// small non-negative ratios of gap details ("0.41"). v·100 is rounded to an
// integer (its floor, plus one when its fraction is above one half); off a
// tie (x.5) that rounds as the exact decimal value of v would, since
// rounding is monotonic. On a tie, where the product's rounding hides on
// which side of it v lies, and for negative (-0 included: "-0.00"), large
// or NaN values, strconv does the work.
func appendFixed2(b []byte, v float64) []byte {
	if !(v >= 0 && v < 1e9) || math.Signbit(v) { // NaN, negative, -0 or large
		return strconv.AppendFloat(b, v, 'f', 2, 64)
	}
	r := v * 100
	n := uint64(r) // r is below 1e11: the conversion is exact, and floors
	switch frac := r - float64(n); {
	case frac == 0.5:
		return strconv.AppendFloat(b, v, 'f', 2, 64)
	case frac > 0.5:
		n++
	}
	b = strconv.AppendUint(b, n/100, 10)
	return append(b, '.', byte('0'+n/10%10), byte('0'+n%10))
}
