package spec

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// What an owner of a table of [deploy] (a deployer, the hosts) needs of
// the spec beyond Decode and Errorf: where a table is written, which of
// several comes first, and the names of a table's entries in file order.

// Where locates key as Errorf does: the line of the key, of the factor
// that set it or of its nearest written parent, or, when a --set flag
// set it, that flag as typed (and line 0).
func (s *Spec) Where(key string) (line int, flag string) { return s.where(key) }

// Children lists the names of the entries of the table at path (hosts of
// [deploy.hosts], pairs of [deploy.links]) in file order; names set by
// factor levels or flags alone come last, sorted.
func (s *Spec) Children(path string) []string {
	raw, _ := s.Lookup(path)
	m, _ := raw.(map[string]any)
	return s.orderedChildren(path, m)
}

// TableKey is the key to locate the table at key by: key itself when the
// file, a factor or a flag wrote it (or a table holding it), else its
// first key in file order, as `--set deploy.links."a-b".latency=...`
// writes only that key.
func (s *Spec) TableKey(key string) string {
	if _, ok := s.index.lines[key]; ok {
		return key
	}
	for k := key; k != ""; k = parentKey(k) {
		if _, ok := s.setBy[k]; ok {
			return key
		}
		if _, ok := s.setByFlag[k]; ok {
			return key
		}
	}
	if keys := s.Children(key); len(keys) > 0 {
		return key + "." + quoteKeyPart(keys[0])
	}
	return key
}

// FirstWritten returns the first of tables the spec writes, in file
// order, as the key to report it at: a table of named tables
// ([deploy.hosts]) by its first entry, any other by itself; ok is false
// when it writes none. A table set by a flag alone comes after those in
// the file.
func (s *Spec) FirstWritten(tables ...string) (key string, ok bool) {
	var keys []string
	for _, t := range tables {
		v, written := s.Lookup(t)
		if !written {
			continue
		}
		m, _ := v.(map[string]any)
		if len(m) == 0 || !allTables(m) {
			keys = append(keys, s.TableKey(t))
			continue
		}
		for name := range m {
			keys = append(keys, s.TableKey(t+"."+quoteKeyPart(name)))
		}
	}
	if len(keys) == 0 {
		return "", false
	}
	line := func(k string) int {
		if l := s.Line(k); l > 0 {
			return l
		}
		return math.MaxInt
	}
	return slices.MinFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(line(a), line(b)), strings.Compare(a, b))
	}), true
}

// allTables reports whether every value of m is a table.
func allTables(m map[string]any) bool {
	for _, v := range m {
		if _, ok := v.(map[string]any); !ok {
			return false
		}
	}
	return true
}
