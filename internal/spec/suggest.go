package spec

import (
	"fmt"
	"reflect"
	"strings"
)

// knownKeys lists the toml keys of the struct that v points to, at the
// nested path parts (through struct fields only).
func knownKeys(v any, parts []string) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, p := range parts {
		if t == nil || t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := fieldByTag(t, p)
		if !ok {
			return nil
		}
		t = f.Type
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if name := tagName(t.Field(i)); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if tagName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func tagName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := strings.Split(f.Tag.Get("toml"), ",")[0]
	if tag == "-" {
		return ""
	}
	if tag == "" {
		return f.Name
	}
	return tag
}

// didYouMean returns ` (did you mean "x"?)` when one known key is within two
// edits of got, or lists the known keys when there are few enough to read.
func didYouMean(got string, known []string) string {
	if best := closest(got, known); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(known) > 0 && len(known) <= 12 {
		return fmt.Sprintf(" (known keys: %s)", strings.Join(known, ", "))
	}
	return ""
}

// editDistance is the Levenshtein distance, for short key names only.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
