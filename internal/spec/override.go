package spec

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Set replaces the value at a dotted key, as `svclab run --set` does:
// key=value where value is a TOML value (`3`, `"1s"`, `["a", "b"]`), or a
// bare string when it does not parse as one. Quoted key parts keep their
// dots: experiment.factors."app.op"=["void","movie"].
//
// Overrides are recorded in Overrides, which the result store keeps beside
// the spec text, so a resumed experiment must be given the same ones.
func (s *Spec) Set(assignment string) error {
	key, raw, ok := strings.Cut(assignment, "=")
	key, raw = strings.TrimSpace(key), strings.TrimSpace(raw)
	if !ok || key == "" {
		return fmt.Errorf("--set %q: write key=value, e.g. --set load.rate=100", assignment)
	}
	parts, err := splitKey(key)
	if err != nil {
		return fmt.Errorf("--set %q: %w", assignment, err)
	}
	if err := s.setParts(parts, ParseValue(raw)); err != nil {
		return fmt.Errorf("--set %s: %w", key, err)
	}
	s.Overrides = append(s.Overrides, key+"="+raw)
	return nil
}

// SetValue is Set with the value already read: a string, bool, int64,
// float64, or a []any or map[string]any of them, as TOML decoding gives.
// Command-line flags that stand for a key use it, so that a flag's value
// meets the same checks as the key's in a spec. It is recorded in
// Overrides as key=value with the value in TOML, which Set reads back.
func (s *Spec) SetValue(key string, value any) error {
	parts, err := splitKey(key)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).SetTablesInline(true).Encode(map[string]any{"v": value}); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	raw := strings.TrimSuffix(strings.TrimPrefix(b.String(), "v = "), "\n")
	if err := s.setParts(parts, deepCopy(value)); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	s.Overrides = append(s.Overrides, key+"="+raw)
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

// setParts sets the value at a split key, and undoes it when the spec's
// own tables no longer decode.
func (s *Spec) setParts(parts []string, value any) error {
	saved, savedOwn := deepCopy(s.tree).(map[string]any), *s
	restore := func(err error) error {
		*s = savedOwn
		s.tree = saved
		return err
	}
	if err := setPath(s.tree, parts, value); err != nil {
		return restore(err)
	}
	if err := s.checkTopLevel(); err != nil {
		return restore(err)
	}
	if err := s.decodeOwn(); err != nil {
		return restore(err)
	}
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

// splitKey splits a dotted key, honouring double-quoted parts.
func splitKey(key string) ([]string, error) {
	var parts []string
	for key != "" {
		if strings.HasPrefix(key, `"`) {
			q, err := strconv.QuotedPrefix(key)
			if err != nil {
				return nil, fmt.Errorf("unterminated quoted key part in %s", key)
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
	if len(parts) < 2 {
		return nil, fmt.Errorf("name a key inside a table, e.g. load.rate")
	}
	return parts, nil
}
