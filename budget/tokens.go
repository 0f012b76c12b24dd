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
