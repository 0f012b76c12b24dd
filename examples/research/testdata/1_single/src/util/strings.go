// Package util has helpers unrelated to the research.
package util

import "strings"

// Title capitalises the first letter of s.
func Title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
