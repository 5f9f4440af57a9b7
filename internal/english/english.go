// Package english says counts of things as English does: "1 run",
// "2 runs", "0 runs". Every noun svclab counts in its output is regular:
// -es after s, x, ch or sh ("processes"), -s after anything else.
package english

import (
	"strconv"
	"strings"
)

// Count is n and noun, the noun as n needs it (Noun).
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is noun for one of it, its plural for any other count: "run 1"
// but "runs 1,2" where a list follows.
func Noun(n int, noun string) string {
	if n == 1 {
		return noun
	}
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(noun, end) {
			return noun + "es"
		}
	}
	return noun + "s"
}

// Agree is one for one of a thing, other for any other count: the words
// that agree with the count ("1 span lost its parent", "2 spans lost
// their parent").
func Agree(n int, one, other string) string {
	if n == 1 {
		return one
	}
	return other
}
