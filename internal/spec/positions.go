package spec

import (
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyIndex records, for every key a TOML document writes, the line it is
// written on, and the order keys appear in. Keys are dotted paths; elements
// of arrays of tables are written as path[i].
type keyIndex struct {
	lines map[string]int
	order []string
}

func indexKeys(src []byte) keyIndex {
	idx := keyIndex{lines: map[string]int{}}
	p := unstable.Parser{}
	p.Reset(src)
	prefix := ""
	arrayCount := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			prefix = joinKey(e.Key())
			idx.add(prefix, lineOf(&p, e))
		case unstable.ArrayTable:
			base := joinKey(e.Key())
			n := arrayCount[base]
			arrayCount[base] = n + 1
			prefix = base + "[" + strconv.Itoa(n) + "]"
			idx.add(base, lineOf(&p, e))
			idx.add(prefix, lineOf(&p, e))
		case unstable.KeyValue:
			idx.addKeyValue(&p, prefix, e)
		}
	}
	// A syntax error stops the walk early; the decoder reports it with its
	// own position, so a partial index is enough here.
	return idx
}

func (idx *keyIndex) add(key string, line int) {
	if _, seen := idx.lines[key]; seen {
		return
	}
	idx.lines[key] = line
	idx.order = append(idx.order, key)
}

func (idx *keyIndex) addKeyValue(p *unstable.Parser, prefix string, kv *unstable.Node) {
	key := joinKey(kv.Key())
	if prefix != "" {
		key = prefix + "." + key
	}
	line := lineOf(p, kv)
	// Register the intermediate tables of a dotted key too, so that an
	// error about "deploy" in `deploy.transport = ...` has a line.
	parts := strings.Split(key, ".")
	for i := 1; i < len(parts); i++ {
		idx.add(strings.Join(parts[:i], "."), line)
	}
	idx.add(key, line)
	v := kv.Value()
	if v.Kind == unstable.InlineTable {
		it := v.Children()
		for it.Next() {
			idx.addKeyValue(p, key, it.Node())
		}
	}
}

func joinKey(it unstable.Iterator) string {
	var parts []string
	for it.Next() {
		parts = append(parts, quoteKeyPart(string(it.Node().Data)))
	}
	return strings.Join(parts, ".")
}

// quoteKeyPart keeps a key part that itself contains a dot, such as the
// factor name in `"deploy.transport" = [...]`, distinguishable from a
// nested key.
func quoteKeyPart(s string) string {
	if strings.ContainsAny(s, ". \"") || s == "" {
		return strconv.Quote(s)
	}
	return s
}

func lineOf(p *unstable.Parser, n *unstable.Node) int {
	r := n.Raw
	if n.Kind == unstable.KeyValue || n.Kind == unstable.Table || n.Kind == unstable.ArrayTable {
		// KeyValue and table nodes carry no range of their own; their key does.
		it := n.Key()
		if it.Next() {
			r = it.Node().Raw
		}
	}
	if r.Length == 0 && r.Offset == 0 {
		return 0
	}
	return p.Shape(r).Start.Line
}
