package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// extractor takes values out of a response into session variables.
type extractor struct {
	vars    []string // variable names, sorted, for a stable order
	src     map[string]string
	json    bool // some rule reads the body as JSON
	headers map[string]string
}

func newExtractor(m map[string]string) *extractor {
	if len(m) == 0 {
		return nil
	}
	e := &extractor{src: m, headers: map[string]string{}}
	for v, src := range m {
		e.vars = append(e.vars, v)
		kind, arg, _ := strings.Cut(src, ":")
		switch kind {
		case "json":
			e.json = true
		case "header":
			e.headers[strings.ToLower(arg)] = v
		}
	}
	sort.Strings(e.vars)
	return e
}

// forget drops the values e is about to extract, so that a stale value
// never passes for a fresh one.
func (e *extractor) forget(s *Session) {
	if e == nil {
		return
	}
	for _, v := range e.vars {
		delete(s.Vars, v)
	}
}

// fromBody applies the json: and cookie: rules.
func (e *extractor) fromBody(s *Session, body []byte) error {
	var doc any
	if e.json {
		if err := json.Unmarshal(body, &doc); err != nil {
			return classed("extract", fmt.Errorf("response is not JSON: %w", err))
		}
	}
	for _, v := range e.vars {
		kind, arg, _ := strings.Cut(e.src[v], ":")
		switch kind {
		case "json":
			val, ok := jsonPath(doc, arg)
			if !ok {
				return classed("extract", fmt.Errorf("response has no JSON field %q for {{%s}}", arg, v))
			}
			s.Set(v, val)
		case "cookie":
			found := false
			for _, c := range s.cookies {
				if c.name == arg {
					s.Set(v, c.value)
					found = true
				}
			}
			if !found {
				return classed("extract", fmt.Errorf("response set no cookie %q for {{%s}}", arg, v))
			}
		case "header":
			if _, ok := s.Vars[v]; !ok {
				return classed("extract", fmt.Errorf("response has no header %q for {{%s}}", arg, v))
			}
		}
	}
	return nil
}

// jsonPath walks "a.b.0.c" through decoded JSON; strings come out bare,
// anything else as JSON.
func jsonPath(doc any, path string) (string, bool) {
	cur := doc
	for _, k := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				return "", false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return "", false
			}
			cur = c[i]
		default:
			return "", false
		}
	}
	if s, ok := cur.(string); ok {
		return s, true
	}
	b, err := json.Marshal(cur)
	return string(b), err == nil
}

// sessionHeader keeps cookies (always: a session carries its cookies the
// way a browser does) and the headers ex extracts. The common case, no
// Set-Cookie and nothing to extract, costs one length comparison.
func sessionHeader(s *Session, ex *extractor, name, value []byte) {
	if len(name) == 10 && asciiEqualFold(name, "set-cookie") {
		v := value
		if i := bytes.IndexByte(v, ';'); i >= 0 {
			v = v[:i]
		}
		if k, val, ok := bytes.Cut(v, []byte("=")); ok {
			s.setCookie(string(bytes.TrimSpace(k)), string(bytes.TrimSpace(val)))
		}
	}
	if ex != nil && len(ex.headers) > 0 {
		if v, ok := ex.headers[strings.ToLower(string(name))]; ok {
			s.Set(v, string(value))
		}
	}
}
