package load

import (
	"regexp"
	"strconv"
	"strings"
)

// varRef is a reference to a session value in a path, body or header
// value: {{name}}, {{user}} or {{iteration}}.
var varRef = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// pickRef is a random choice, made anew at every rendering with the
// session's random source (load.seed): {{pick:EUR|USD|JPY}}, as a Locust
// task's random.choice.
var pickRef = regexp.MustCompile(`\{\{\s*pick:([^{}]*)\}\}`)

// anyRef is either reference, in the order they are written.
var anyRef = regexp.MustCompile(varRef.String() + `|` + pickRef.String())

// tmpl is a string with {{name}} references to session values and
// {{pick:a|b}} choices.
type tmpl struct {
	parts []tpart
	vars  bool
}

// tpart is a literal run of a template, or one reference.
type tpart struct {
	lit  string
	v    string   // variable name when not empty
	pick []string // choices of a {{pick:...}} when not empty
}

// compileTmpl splits s once, so that rendering per request only appends.
func compileTmpl(s string) tmpl {
	var t tmpl
	at := 0
	for _, m := range anyRef.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > at {
			t.parts = append(t.parts, tpart{lit: s[at:m[0]]})
		}
		if m[2] >= 0 {
			t.parts = append(t.parts, tpart{v: s[m[2]:m[3]]})
		} else {
			t.parts = append(t.parts, tpart{pick: strings.Split(s[m[4]:m[5]], "|")})
		}
		t.vars = true
		at = m[1]
	}
	if at < len(s) {
		t.parts = append(t.parts, tpart{lit: s[at:]})
	}
	return t
}

// appendTo renders t for session s onto b, so that a request is built in a
// reused buffer without allocating.
func (t tmpl) appendTo(b []byte, s *Session) []byte {
	for _, p := range t.parts {
		switch {
		case p.pick != nil:
			b = append(b, p.pick[s.Rand.IntN(len(p.pick))]...)
		case p.v == "":
			b = append(b, p.lit...)
		case p.v == "user":
			b = strconv.AppendInt(b, int64(s.User), 10)
		case p.v == "iteration":
			b = strconv.AppendInt(b, s.Iteration, 10)
		default:
			b = append(b, s.Vars[p.v]...)
		}
	}
	return b
}

func (t tmpl) render(s *Session) string { return string(t.appendTo(nil, s)) }
