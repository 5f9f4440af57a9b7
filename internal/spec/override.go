package spec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Set replaces the value at a dotted key, as `svclab run --set` does:
// key=value where value is a TOML value (`3`, `"1s"`, `["a", "b"]`), or a
// bare string when it does not parse as one. Quoted key parts keep their
// dots: experiment.factors."app.op"=["void","movie"]. The spec is checked
// again; on an error it is left as it was.
//
// Overrides are recorded in Overrides, which the result store keeps beside
// the spec text, so a resumed experiment must be given the same ones.
// Parse and Load take overrides too, and apply them before checking the
// spec at all, so that an override can mend a file that is wrong without
// it (raise experiment.max_runs, say).
func (s *Spec) Set(assignment string) error {
	// The tree is replaced, not changed in place: specs made by With
	// share parts of it.
	saved := *s
	s.tree = deepCopy(s.tree).(map[string]any)
	err := s.assign(assignment)
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

// assign applies one --set assignment to the tree, unchecked, and records
// it. Errors, and later errors about the value, name the flag.
func (s *Spec) assign(assignment string) error {
	key, raw, ok := strings.Cut(assignment, "=")
	key, raw = strings.TrimSpace(key), strings.TrimSpace(raw)
	if !ok || key == "" {
		return &Error{Flag: "--set " + quoteShort(assignment), Err: fmt.Errorf("write key=value, e.g. --set load.rate=100")}
	}
	parts, err := splitKey(key)
	if err != nil {
		return &Error{Flag: "--set " + quoteShort(assignment), Err: err}
	}
	var holder struct{ V any }
	var value any = raw
	if err := toml.Unmarshal([]byte("V = "+raw), &holder); err == nil {
		value = holder.V
	}
	flag := "--set " + cut(key) + "=" + cut(raw)
	if !slices.Contains(Tables, parts[0]) {
		return &Error{Flag: flag, Key: quoteKeyPart(parts[0]), Err: fmt.Errorf("unknown table (a spec has only [%s])%s", strings.Join(Tables, "], ["), didYouMean(parts[0], Tables))}
	}
	abs := make([]string, len(parts))
	for i, p := range parts {
		abs[i] = quoteKeyPart(p)
	}
	if err := setPath(s.tree, parts, value); err != nil {
		return &Error{Flag: flag, Key: strings.Join(abs, "."), Err: err}
	}
	s.setByFlag = maps.Clone(s.setByFlag)
	if s.setByFlag == nil {
		s.setByFlag = map[string]string{}
	}
	s.setByFlag[strings.Join(abs, ".")] = flag
	s.Overrides = append(slices.Clip(s.Overrides), key+"="+raw)
	return nil
}

// splitKey splits a dotted key, honouring double-quoted parts.
func splitKey(key string) ([]string, error) {
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
	if len(parts) < 2 {
		return nil, fmt.Errorf("name a key inside a table, e.g. load.rate")
	}
	return parts, nil
}
