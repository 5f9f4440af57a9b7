package spec

import (
	"errors"
	"strings"
	"testing"
)

const resourcesSpec = `[app]
name = "chain"

[deploy.resources.hop1]
cpu = 0.5
memory = "64MiB"

[deploy.resources.hop2]
memory = "1GB"

[experiment]
isolation = "none"
[experiment.factors]
"deploy.resources.hop1.cpu" = [0.25, 1]
`

func TestResources(t *testing.T) {
	s, err := Parse("r.toml", []byte(resourcesSpec))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Deploy.Resources["hop1"]; got.CPU != 0.5 || got.Memory != 64<<20 {
		t.Errorf("hop1 = %+v, want cpu 0.5, memory 64MiB", got)
	}
	if got := s.Deploy.Resources["hop2"]; got.CPU != 0 || got.Memory != 1_000_000_000 {
		t.Errorf("hop2 = %+v, want no cpu limit, memory 1GB", got)
	}
	if s.Experiment.Isolation != IsolationNone {
		t.Errorf("isolation = %q", s.Experiment.Isolation)
	}
	run, err := s.With(map[string]any{"deploy.resources.hop1.cpu": 0.25})
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Deploy.Resources["hop1"]; got.CPU != 0.25 || got.Memory != 64<<20 {
		t.Errorf("with cpu=0.25: hop1 = %+v", got)
	}
	if def, err := Parse("d.toml", []byte("[app]\nname = \"chain\"\n")); err != nil || def.Experiment.Isolation != "" || def.Deploy.Resources != nil {
		t.Errorf("a spec without the keys: %+v, %v", def.Experiment, err)
	}
}

func TestResourcesBad(t *testing.T) {
	for _, c := range []struct {
		name, body string
		key        string
		line       int
		msg        string
	}{
		{"zero cpu", "[deploy.resources.hop1]\ncpu = 0\n", "deploy.resources.hop1.cpu", 5, "from 0.01"},
		{"negative cpu", "[deploy.resources.hop1]\ncpu = -1\n", "deploy.resources.hop1.cpu", 5, "from 0.01"},
		{"cpu a string", "[deploy.resources.hop1]\ncpu = \"half\"\n", "deploy.resources.hop1.cpu", 5, "number"},
		{"memory unparsable", "[deploy.resources.hop1]\nmemory = \"lots\"\n", "deploy.resources.hop1.memory", 5, "not a size"},
		{"memory bare number", "[deploy.resources.hop1]\nmemory = \"512\"\n", "deploy.resources.hop1.memory", 5, "needs a unit"},
		{"memory zero", "[deploy.resources.hop1]\nmemory = \"0MiB\"\n", "deploy.resources.hop1.memory", 5, "from 8MiB"},
		{"cpu below the kernel's quota", "[deploy.resources.hop1]\ncpu = 0.001\n", "deploy.resources.hop1.cpu", 5, "from 0.01"},
		{"memory too small to start", "[deploy.resources.hop1]\nmemory = \"1KiB\"\n", "deploy.resources.hop1.memory", 5, "from 8MiB"},
		{"unknown key", "[deploy.resources.hop1]\ncpus = 1\n", "deploy.resources.hop1.cpus", 5, ""},
		{"isolation", "[experiment]\nisolation = \"cores\"\n", "experiment.isolation", 5, `"cpuset" or "none"`},
		{"bad factor level", "[experiment.factors]\n\"deploy.resources.hop1.cpu\" = [0.5, 0]\n", "deploy.resources.hop1.cpu", 5, "from 0.01"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "[app]\nname = \"chain\"\n\n" + c.body
			s, err := Parse("bad.toml", []byte(src))
			if err == nil && strings.Contains(c.body, "factors") {
				_, err = s.With(map[string]any{"deploy.resources.hop1.cpu": int64(0)})
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *spec.Error", err)
			}
			if se.Key != c.key || se.Line != c.line || se.File != "bad.toml" || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %q (key %q line %d), want key %s line %d mentioning %q", err, se.Key, se.Line, c.key, c.line, c.msg)
			}
		})
	}
}
