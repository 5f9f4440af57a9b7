package runtime_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

const selectSplit = "[app]\nname = \"select\"\n[deploy]\nplacement = \"split\"\n"

func TestLanguageErrors(t *testing.T) {
	tests := []struct {
		name, spec, key string
		line            int
		msg             string
	}{
		{"unknown language", selectSplit + "[deploy.languages]\nselector = \"jav\"\n",
			"deploy.languages.selector", 6, `unknown language "jav" (did you mean "java"?)`},
		{"unknown language, far off", selectSplit + "[deploy.languages]\nselector = \"rust\"\n",
			"deploy.languages.selector", 6, `unknown language "rust" (known: go, java, python)`},
		{"unknown component", selectSplit + "[deploy.languages]\nselectr = \"java\"\n",
			"deploy.languages.selectr", 6, `app select has no component "selectr" (did you mean "selector"?)`},
		{"app not implemented", "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\n[deploy.languages]\nhop2 = \"python\"\n",
			"deploy.languages.hop2", 6, "python implements no component of app chain (it implements every component of rpcops, select)"},
		{"not alone in its group", "[app]\nname = \"select\"\n[deploy.languages]\nselector = \"java\"\n",
			"deploy.languages.selector", 4, `a java component runs alone in its group, but placement "monolith" puts selector with frontend`},
		{"netrpc", selectSplit + "transport = \"netrpc\"\n[deploy.languages]\nfrontend = \"python\"\n",
			"deploy.languages.frontend", 7, `transport "netrpc" is Go's alone`},
		{"protorpc", selectSplit + "transport = \"protorpc\"\n[deploy.languages]\nfrontend = \"java\"\n",
			"deploy.languages.frontend", 7, `transport "protorpc" is Go's alone`},
		{"inproc", "[app]\nname = \"select\"\n[deploy]\ntransport = \"inproc\"\n[deploy.languages]\nselector = \"java\"\n",
			"deploy.languages.selector", 6, `transport "inproc" is Go's alone`},
		{"java http client on unix", selectSplit + "transport = \"http\"\nnetwork = \"unix\"\n[deploy.languages]\nfrontend = \"java\"\n",
			"deploy.languages.frontend", 8, "http on tcp only"},
		{"mtls", selectSplit + "mtls = true\n[deploy.languages]\nselector = \"java\"\n",
			"deploy.languages.selector", 7, "deploy.mtls (line 5) is served by Go hosts alone"},
		{"tracing behind sidecars", selectSplit + "sidecar = \"envoy\"\nmtls = true\ntracing = 1.0\n[deploy.languages]\nselector = \"python\"\n",
			"deploy.languages.selector", 9, "deploy.tracing (line 7) is served by Go hosts alone"},
		{"as a factor level", selectSplit + "[deploy.languages]\nselector = \"go\"\n[experiment]\n[experiment.factors]\n\"deploy.languages.selector\" = [\"go\", \"java\", \"pyton\"]\n",
			"deploy.languages.selector", 9, `unknown language "pyton" (did you mean "python"?)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := parse(t, tc.spec)
			var err error
			if strings.Contains(tc.spec, "[experiment.factors]") {
				err = resolveRuns(t, s)
			} else {
				_, err = runtime.Resolve(s)
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want a *spec.Error", err, err)
			}
			if se.Key != tc.key || se.Line != tc.line || !strings.Contains(se.Error(), tc.msg) {
				t.Errorf("got %q (key %q line %d), want key %q line %d containing %q", se.Error(), se.Key, se.Line, tc.key, tc.line, tc.msg)
			}
		})
	}
}

// TestLanguageMTLSBehindSidecars: with sidecars the proxies carry mTLS and
// the hosts stay plaintext, so a Java or Python component may have it.
func TestLanguageMTLSBehindSidecars(t *testing.T) {
	for _, sc := range []string{spec.SidecarEnvoy, spec.SidecarNginx, spec.SidecarHAProxy} {
		s := parse(t, selectSplit+"mtls = true\nsidecar = \""+sc+"\"\n[deploy.languages]\nselector = \"java\"\n")
		p, err := runtime.Resolve(s)
		if err != nil {
			t.Fatalf("%s: %v", sc, err)
		}
		if !p.Mesh.MTLS || p.Language("selector") != runtime.LangJava {
			t.Errorf("%s: mtls %v, selector in %s", sc, p.Mesh.MTLS, p.Language("selector"))
		}
	}
}

// resolveRuns resolves every level of the spec's factors, as the runner
// does before it starts anything, and returns the first error.
func resolveRuns(t *testing.T, s *spec.Spec) error {
	t.Helper()
	for _, f := range s.Experiment.Factors {
		for _, level := range f.Levels {
			run, err := s.With(map[string]any{f.Name: level})
			if err != nil {
				t.Fatalf("level %v of %s: %v", level, f.Name, err)
			}
			if _, err := runtime.Resolve(run); err != nil {
				return err
			}
		}
	}
	return nil
}

func TestLanguages(t *testing.T) {
	p, err := runtime.Resolve(parse(t, selectSplit+"transport = \"http\"\n[deploy.languages]\nselector = \"java\"\nfrontend = \"go\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"selector": "java"}; !maps.Equal(p.Languages, want) {
		t.Errorf("Languages %v, want %v (Go is the default and not listed)", p.Languages, want)
	}
	for i, want := range map[int]string{p.GroupOf("frontend"): "go", p.GroupOf("selector"): "java"} {
		if got := p.GroupLanguage(i); got != want {
			t.Errorf("group %s: language %q, want %q", p.Groups[i].Name, got, want)
		}
	}
	mono, err := runtime.Resolve(parse(t, "[app]\nname = \"select\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if mono.Languages != nil || mono.GroupLanguage(0) != runtime.LangGo {
		t.Errorf("a spec without deploy.languages: %v, group language %q, want all Go", mono.Languages, mono.GroupLanguage(0))
	}
}

// TestLanguageMetrics checks that deploy.metrics, which the Java and
// Python hosts serve, resolves with a component in either language.
func TestLanguageMetrics(t *testing.T) {
	for _, lang := range []string{runtime.LangJava, runtime.LangPython} {
		s := parse(t, selectSplit+"metrics = true\n[deploy.languages]\nselector = \""+lang+"\"\n")
		p, err := runtime.Resolve(s)
		if err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		if !p.Mesh.Metrics || p.Language("selector") != lang {
			t.Errorf("%s: metrics %v, selector in %s", lang, p.Mesh.Metrics, p.Language("selector"))
		}
	}
}
