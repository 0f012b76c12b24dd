// Package textfmt formats numbers for the example programs' output.
package textfmt

// Tokens formats a token count with thousands separators, e.g. "4,230" or
// "100,000", for lines such as "Token count: 4,230 / 100,000" (seed 004).
func Tokens(n int64) string {
	var buf [32]byte
	i := len(buf)
	// Work on the magnitude as uint64 so that the smallest int64 is exact.
	u := uint64(n)
	if n < 0 {
		u = -u
	}
	for digits := 0; ; digits++ {
		if digits > 0 && digits%3 == 0 {
			i--
			buf[i] = ','
		}
		i--
		buf[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if n < 0 {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}
