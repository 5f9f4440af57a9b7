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
	// onLine is the first key or header written on each line, every time
	// it is written: a key written twice is in lines only once.
	onLine map[int]string
}

func indexKeys(src []byte) keyIndex {
	idx := keyIndex{lines: map[string]int{}, onLine: map[int]string{}}
	p := unstable.Parser{}
	p.Reset(src)
	prefix := ""
	// arrays counts the elements of each array of tables seen so far, by
	// its resolved path, so that a later header under it ([a.b] after
	// [[a]]) is placed in its newest element, as TOML does.
	arrays := map[string]int{}
	// implied are the tables a header makes without naming them (deploy.hosts
	// of [deploy.hosts.vm1]), at the first header that implies each: their
	// line when the file writes them nowhere else, so that an error about
	// one ("deploy.host: unknown key") points at the header that made it.
	implied := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			prefix = resolveHeader(keyParts(e.Key()), arrays)
			idx.add(prefix, lineOf(&p, e))
			imply(implied, prefix, lineOf(&p, e))
		case unstable.ArrayTable:
			base := resolveHeader(keyParts(e.Key()), arrays)
			n := arrays[base]
			arrays[base] = n + 1
			prefix = base + "[" + strconv.Itoa(n) + "]"
			idx.add(base, lineOf(&p, e))
			idx.add(prefix, lineOf(&p, e))
			imply(implied, base, lineOf(&p, e))
		case unstable.KeyValue:
			idx.addKeyValue(&p, prefix, e)
		}
	}
	for k, line := range implied {
		if _, written := idx.lines[k]; !written {
			idx.lines[k] = line
		}
	}
	// A syntax error stops the walk early; the decoder reports it with its
	// own position, so a partial index is enough here.
	return idx
}

// imply records the parents of key (a header's resolved path) on line,
// unless an earlier header implied them.
func imply(implied map[string]int, key string, line int) {
	for k := parentKey(key); k != ""; k = parentKey(k) {
		if _, seen := implied[k]; !seen {
			implied[k] = line
		}
	}
}

// resolveHeader joins the parts of a table header, entering the newest
// element of every array of tables on the way: after [[load.stages]] twice,
// [load.stages.x] is load.stages[1].x.
func resolveHeader(parts []string, arrays map[string]int) string {
	var b strings.Builder
	for i, part := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
		if i < len(parts)-1 {
			if n := arrays[b.String()]; n > 0 {
				b.WriteString("[" + strconv.Itoa(n-1) + "]")
			}
		}
	}
	return b.String()
}

func (idx *keyIndex) add(key string, line int) {
	if _, seen := idx.onLine[line]; !seen {
		idx.onLine[line] = key
	}
	if _, seen := idx.lines[key]; seen {
		return
	}
	idx.lines[key] = line
	idx.order = append(idx.order, key)
}

func (idx *keyIndex) addKeyValue(p *unstable.Parser, prefix string, kv *unstable.Node) {
	parts := keyParts(kv.Key())
	line := lineOf(p, kv)
	if _, seen := idx.onLine[line]; !seen {
		idx.onLine[line] = strings.TrimPrefix(prefix+"."+strings.Join(parts, "."), ".")
	}
	// Register the intermediate tables of a dotted key too, so that an
	// error about "deploy" in `deploy.transport = ...` has a line.
	key := prefix
	for _, part := range parts {
		if key != "" {
			key += "."
		}
		key += part
		idx.add(key, line)
	}
	idx.addValue(p, key, kv.Value(), line)
}

// addValue registers what a value holds: the keys of an inline table, and
// each element of an array as key[i], on the line that element starts on,
// so that an error in the second of several inline tables points there.
func (idx *keyIndex) addValue(p *unstable.Parser, key string, v *unstable.Node, line int) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			idx.addKeyValue(p, key, it.Node())
		}
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); {
			el := it.Node()
			if el.Kind == unstable.Comment {
				continue
			}
			elKey := key + "[" + strconv.Itoa(i) + "]"
			elLine := firstLine(p, el)
			if elLine == 0 {
				elLine = line
			}
			idx.add(elKey, elLine)
			idx.addValue(p, elKey, el, elLine)
			i++
		}
	}
}

// firstLine is the line a value starts on; arrays carry no range of their
// own, so theirs is their first element's.
func firstLine(p *unstable.Parser, n *unstable.Node) int {
	if l := lineOf(p, n); l > 0 {
		return l
	}
	it := n.Children()
	for it.Next() {
		if l := firstLine(p, it.Node()); l > 0 {
			return l
		}
	}
	return 0
}

// keyParts returns the parts of a key, each quoted when it holds a dot.
func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, quoteKeyPart(string(it.Node().Data)))
	}
	return parts
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

// KeyOf joins parts into a dotted key as errors name it, quoting a part
// that holds a dot (deploy.kube.node_selector."kubernetes.io/hostname").
func KeyOf(parts ...string) string {
	quoted := make([]string, len(parts))
	for i, p := range parts {
		quoted[i] = quoteKeyPart(p)
	}
	return strings.Join(quoted, ".")
}
