package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// FormatValue writes a key's value as plan, progress and note lines show
// it: a scalar as it is (grpc, 0.5), an inline table or an array as TOML
// writes one ({cpu = 0.5, memory = "256MiB"}), keys in order, so that a
// factor whose levels are tables reads as the spec wrote them.
func FormatValue(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		return formatInner(v)
	}
	return fmt.Sprint(v)
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func formatInner(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			name := k
			if !bareKey.MatchString(k) {
				name = strconv.Quote(k)
			}
			parts[i] = name + " = " + formatInner(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatInner(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}
