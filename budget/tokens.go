package budget

import "unicode"

// EstimateTokens estimates the tokens of text: about one per four bytes, at
// least one per word, and 0 for the empty string. Precisely, it returns the
// larger of ceil(len(text)/4) and the number of words as [strings.Fields]
// counts them. It does not allocate.
func EstimateTokens(text string) int {
	n := len(text)
	byBytes := n / 4
	if n%4 != 0 {
		byBytes++
	}
	words := 0
	inWord := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			inWord = false
		} else if !inWord {
			inWord = true
			words++
		}
	}
	return max(byBytes, words)
}

// FormatTokens formats a token count with thousands separators, e.g.
// "4,230" or "100,000", for lines such as "Token count: 4,230 / 100,000".
func FormatTokens(n int64) string {
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
