package spec

import (
	"fmt"
	"strings"
)

// DidYouMean returns ` (did you mean "x"?)` when one of known is within two
// edits of got, else ` (known: a, b, …)`: the hint for a value that must be
// one of a few names (a language, a component), as didYouMean is for keys.
func DidYouMean(got string, known []string) string {
	if best := closest(got, known); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (known: %s)", strings.Join(known, ", "))
}

// closest is the entry of known nearest to got, case aside, if it is
// within two edits; else "".
func closest(got string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(got), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}
