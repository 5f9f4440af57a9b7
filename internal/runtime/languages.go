package runtime

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/spec"
)

// The languages a component can be implemented in (deploy.languages).
const (
	LangGo     = "go"
	LangJava   = "java"
	LangPython = "python"
)

// Languages lists the values of deploy.languages, the default first.
var Languages = []string{LangGo, LangJava, LangPython}

// langApps lists, per language other than Go, the apps it implements (every
// component of each); Go implements every app. docs/LANGUAGES.md has the
// table.
var langApps = map[string][]string{
	LangJava:   {"rpcops", "select"},
	LangPython: {"rpcops", "select"},
}

// langTransports are the transports the Java and Python hosts speak:
// netrpc (gob), protorpc and inproc are Go's alone.
var langTransports = []string{"grpc", "http"}

// Language is the language of component c's implementation: LangGo unless
// deploy.languages says otherwise.
func (p *Topology) Language(c string) string {
	if l, ok := p.Languages[c]; ok {
		return l
	}
	return LangGo
}

// GroupLanguage is the language of group i's host: Go, or the language of
// its one component.
func (p *Topology) GroupLanguage(i int) string {
	g := p.Groups[i]
	if len(g.Components) == 1 {
		return p.Language(g.Components[0])
	}
	return LangGo
}

// resolveLanguages checks deploy.languages against the app, the transport
// and the groups, and records the components not in Go. It runs after the
// groups are known. Each component's first mistake is reported, every
// component's at once.
func (p *Topology) resolveLanguages(s *spec.Spec) error {
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(s.Deploy.Languages)) {
		errs = append(errs, p.resolveLanguage(s, c, s.Deploy.Languages[c]))
	}
	return errors.Join(errs...)
}

// resolveLanguage checks and records component c's language.
func (p *Topology) resolveLanguage(s *spec.Spec, c, lang string) error {
	key := "deploy.languages." + c
	if _, ok := p.components[c]; !ok {
		return s.Errorf(key, "app %s has no component %q%s", p.App.Name, c, spec.DidYouMean(c, p.componentNames()))
	}
	if !slices.Contains(Languages, lang) {
		return s.Errorf(key, "unknown language %q%s", lang, spec.DidYouMean(lang, Languages))
	}
	if lang == LangGo {
		return nil
	}
	if apps := langApps[lang]; !slices.Contains(apps, p.App.Name) {
		return s.Errorf(key, "%s implements no component of app %s (it implements every component of %s); use \"go\"", lang, p.App.Name, strings.Join(apps, ", "))
	}
	if !slices.Contains(langTransports, p.Transport) && slices.Contains(Transports(), p.Transport) { // an unknown one is deploy.transport's mistake
		return s.Errorf(key, "transport %q is Go's alone: a %s component speaks %s; set deploy.transport to one of them", p.Transport, lang, strings.Join(langTransports, " or "))
	}
	// The mesh features live in the Go host's runtime (mesh.go); the
	// Java and Python hosts have metrics alone of them. Behind
	// sidecars the proxies carry mTLS, and the host stays plaintext on
	// loopback.
	sidecars := s.Deploy.Sidecar != "" && s.Deploy.Sidecar != spec.SidecarNone
	for _, m := range MeshOf(s.Deploy).Keys() {
		if m == "deploy.metrics" || m == "deploy.mtls" && sidecars {
			continue
		}
		return s.Errorf(key, "%s%s is served by Go hosts alone, and a %s component has no mesh feature but deploy.metrics (and mTLS behind deploy.sidecar); turn it off or use \"go\"", m, s.Origin(m), lang)
	}
	for _, g := range p.Groups {
		if slices.Contains(g.Components, c) && len(g.Components) > 1 {
			return s.Errorf(key, "a %s component runs alone in its group, but placement %q puts %s with %s; give it a group of its own (placement %q does)",
				lang, p.Placement, c, strings.Join(slices.DeleteFunc(slices.Clone(g.Components), func(o string) bool { return o == c }), ", "), PlacementSplit)
		}
	}
	// The JDK's HTTP client has no unix sockets, so a Java component
	// cannot call its dependencies over http on unix.
	if lang == LangJava && p.Transport == "http" && p.Network == "unix" && len(p.components[c].Deps) > 0 {
		return s.Errorf(key, "a java component calls its dependencies over http on tcp only (the JDK's HTTP client has no unix sockets); set deploy.network = \"tcp\" or deploy.transport = \"grpc\"")
	}
	if p.Languages == nil {
		p.Languages = map[string]string{}
	}
	p.Languages[c] = lang
	return nil
}
