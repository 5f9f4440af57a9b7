package program

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/spec"
)

// A program learns its address and its callees' from templates in its
// command and env: {listen} is where it listens (host:port, or a unix
// socket's path), {port} the port alone, {addr:<name>} where component
// <name> listens. Other text in braces is left as it is, so that JSON or
// shell in an argument needs no escaping.
var templateRE = regexp.MustCompile(`\{(listen|port|addr:[^{}]*)\}`)

// addrRefs are the components s names in {addr:<name>}.
func addrRefs(s string) []string {
	var out []string
	for _, m := range templateRE.FindAllStringSubmatch(s, -1) {
		if name, ok := strings.CutPrefix(m[1], "addr:"); ok {
			out = append(out, name)
		}
	}
	return out
}

// usesPort reports whether s has a {port}.
func usesPort(s string) bool {
	return slices.ContainsFunc(templateRE.FindAllStringSubmatch(s, -1), func(m []string) bool { return m[1] == "port" })
}

// checkTemplate checks that every {addr:<name>} in s names another
// component.
func checkTemplate(s, self string, names []string) error {
	for _, name := range addrRefs(s) {
		switch {
		case name == self:
			return fmt.Errorf("{addr:%s} names the component itself: write {listen}", name)
		case !slices.Contains(names, name):
			return fmt.Errorf("{addr:%s} names no component%s", name, spec.DidYouMean(name, names))
		}
	}
	return nil
}

// Addresses are what templates expand to for one program.
type Addresses struct {
	// Listen is its own address; Port its port ("" on a unix socket).
	Listen, Port string
	// Peers maps each other component to its address.
	Peers map[string]string
}

// Expand replaces the templates in s.
func (a Addresses) Expand(s string) string {
	return templateRE.ReplaceAllStringFunc(s, func(m string) string {
		key := m[1 : len(m)-1]
		switch key {
		case "listen":
			return a.Listen
		case "port":
			return a.Port
		}
		return a.Peers[strings.TrimPrefix(key, "addr:")]
	})
}
