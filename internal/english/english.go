// Package english says counts of things as English does: "1 run",
// "2 runs", "0 runs". Every noun svclab counts in its output takes -s.
package english

import "strconv"

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
	return noun + "s"
}
