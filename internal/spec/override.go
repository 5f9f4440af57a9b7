package spec

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Set replaces the value at a dotted key, as `svclab run --set` does:
// key=value where value is a TOML value (`3`, `"1s"`, `["a", "b"]`), or a
// bare string when it does not parse as one. Quoted key parts keep their
// dots: experiment.factors."app.op"=["void","movie"]. The spec is checked
// again; on an error it is left as it was. Errors about the value, now and
// later, name the flag.
//
// Overrides are recorded in Overrides, which the result store keeps beside
// the spec text, so a resumed experiment must be given the same ones.
// Parse and Load take overrides too, and apply them before checking the
// spec at all, so that an override can mend a file that is wrong without
// it (raise experiment.max_runs, say).
func (s *Spec) Set(assignment string) error {
	return s.checked(func() error { return s.assign(assignment) })
}

// SetValue is Set with the value already read: a string, bool, int64,
// float64, or a []any or map[string]any of them, as TOML decoding gives.
// Command-line flags that stand for a key use it, so that a flag's value
// meets the same checks as the key's in a spec. It is recorded in
// Overrides as key=value with the value in TOML, which Set reads back.
// The caller names its own flag in errors, so the spec does not.
func (s *Spec) SetValue(key string, value any) error {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).SetTablesInline(true).Encode(map[string]any{"v": value}); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	raw := strings.TrimSuffix(strings.TrimPrefix(b.String(), "v = "), "\n")
	if err := s.checked(func() error { return s.assignValue(key, raw, deepCopy(value), "") }); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// ParseValue reads the value of an assignment as Set does: a TOML value
// (`3`, `"1s"`, `["a", "b"]`), or the bare string when it does not parse
// as one.
func ParseValue(raw string) any {
	var holder struct{ V any }
	if err := toml.Unmarshal([]byte("V = "+raw), &holder); err == nil {
		return holder.V
	}
	return raw
}

// checked makes change to a copy of the tree, checks the spec's own
// tables again, and undoes it all on an error. The tree is replaced, not
// changed in place, as specs made by With share parts of it.
func (s *Spec) checked(change func() error) error {
	saved := *s
	s.tree = deepCopy(s.tree).(map[string]any)
	err := change()
	if err == nil {
		err = s.checkTopLevel()
	}
	if err == nil {
		err = s.decodeOwn()
	}
	if err != nil {
		*s = saved
	}
	return err
}

// assign applies one --set assignment to the tree, unchecked.
func (s *Spec) assign(assignment string) error {
	key, raw, ok := strings.Cut(assignment, "=")
	key, raw = strings.TrimSpace(key), strings.TrimSpace(raw)
	if !ok || key == "" {
		return &Error{Flag: "--set " + quoteShort(assignment), Err: fmt.Errorf("write key=value, e.g. --set load.rate=100")}
	}
	return s.assignValue(key, raw, ParseValue(raw), "--set "+cut(key)+"="+cut(raw))
}

// assignValue sets key to value in the tree, unchecked, and records raw,
// the value as written, in Overrides. When flag is not empty, errors about
// the key, now and later, name it rather than a line of the file.
func (s *Spec) assignValue(key, raw string, value any, flag string) error {
	parts, err := splitKey(key)
	if err != nil {
		if flag != "" {
			return &Error{Flag: "--set " + quoteShort(key+"="+raw), Err: err}
		}
		return err
	}
	abs := make([]string, len(parts))
	for i, p := range parts {
		abs[i] = quoteKeyPart(p)
	}
	bad := func(key string, err error) error {
		if flag != "" {
			return &Error{Flag: flag, Key: key, Err: err}
		}
		return err
	}
	if !slices.Contains(Tables, parts[0]) {
		return bad(abs[0], fmt.Errorf("unknown table (a spec has only [%s])%s", strings.Join(Tables, "], ["), didYouMean(parts[0], Tables)))
	}
	if err := setPath(s.tree, parts, value); err != nil {
		return bad(strings.Join(abs, "."), err)
	}
	if flag != "" {
		s.setByFlag = maps.Clone(s.setByFlag)
		if s.setByFlag == nil {
			s.setByFlag = map[string]string{}
		}
		s.setByFlag[strings.Join(abs, ".")] = flag
	}
	s.Overrides = append(slices.Clip(s.Overrides), key+"="+raw)
	return nil
}

// FieldType is the type of the field that key, dotted and relative to a
// table ("request.method"), decodes into in the struct v points to, found
// by toml tags through pointers and slices. A flag that stands for a key
// takes its value's type from here.
func FieldType(v any, key string) (reflect.Type, bool) {
	t := reflect.TypeOf(v)
	for _, p := range strings.Split(key, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return nil, false
		}
		f, ok := fieldByTag(t, p)
		if !ok {
			return nil, false
		}
		t = f.Type
	}
	return t, true
}

// splitKey splits a dotted key of a table's key, honouring double-quoted
// parts.
func splitKey(key string) ([]string, error) {
	parts, err := splitParts(key)
	if err != nil {
		return nil, err
	}
	if len(parts) < 2 {
		return nil, fmt.Errorf("name a key inside a table, e.g. load.rate")
	}
	return parts, nil
}

// splitParts splits a dotted key, honouring double-quoted parts
// (deploy.kube.node_selector."kubernetes.io/hostname").
func splitParts(key string) ([]string, error) {
	var parts []string
	for key != "" {
		if strings.HasPrefix(key, `"`) {
			q, err := strconv.QuotedPrefix(key)
			if err != nil {
				return nil, fmt.Errorf("unterminated quoted key part in %s", cut(key))
			}
			p, _ := strconv.Unquote(q)
			parts = append(parts, p)
			key = key[len(q):]
		} else {
			i := strings.IndexByte(key, '.')
			if i < 0 {
				i = len(key)
			}
			if i == 0 {
				return nil, fmt.Errorf("empty key part")
			}
			parts = append(parts, key[:i])
			key = key[i:]
		}
		if key != "" {
			if key[0] != '.' || len(key) == 1 {
				return nil, fmt.Errorf("expected '.' between key parts")
			}
			key = key[1:]
		}
	}
	return parts, nil
}
