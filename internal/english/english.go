// Package english says counts of things as English does: "1 run",
// "2 runs", "0 runs". Every noun svclab counts in its output takes -s.
package english

import "strconv"

// Count is n and noun, the noun plural unless n is 1.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
