package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

func TestResolveResources(t *testing.T) {
	s := parse(t, `[app]
name = "chain"
hops = 3
[deploy]
placement = "two"
[deploy.placements]
two = [["hop1"], ["hop2", "hop3"]]
[deploy.resources.hop1]
cpu = 0.5
[deploy.resources.hop3]
memory = "64MiB"
`)
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]spec.Resources{"hop1": {CPU: 0.5}, "hop2+hop3": {Memory: 64 << 20}}
	for _, g := range topo.Groups {
		if g.Resources != want[g.Name] {
			t.Errorf("group %s: resources %+v, want %+v", g.Name, g.Resources, want[g.Name])
		}
	}
}

func TestResolveResourcesErrors(t *testing.T) {
	head := "[app]\nname = \"chain\"\nhops = 3\n[deploy]\nplacement = \"two\"\n[deploy.placements]\ntwo = [[\"hop1\"], [\"hop2\", \"hop3\"]]\n"
	for _, c := range []struct {
		name, body, key, msg string
		line                 int
	}{
		{"no such group", "[deploy.resources.products]\ncpu = 1\n", "deploy.resources.products", "no group of placement", 8},
		{"group and component", "[deploy.resources.\"hop2+hop3\"]\ncpu = 1\n[deploy.resources.hop2]\ncpu = 0.5\n", "deploy.resources.hop2", "already has its resources", 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := runtime.Resolve(parse(t, head+c.body))
			var se *spec.Error
			if !errors.As(err, &se) || se.Key != c.key || se.Line != c.line || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want an error at line %d on %s mentioning %q", err, c.line, c.key, c.msg)
			}
		})
	}
}
