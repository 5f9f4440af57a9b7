package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/english"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
	"github.com/svclab/svclab/internal/spec"
)

// Built-in placements, resolved from the app's components when
// [deploy.placements] does not define them.
const (
	PlacementMonolith = "monolith" // every component in one group
	PlacementSplit    = "split"    // one group per component
)

// Topology is a spec resolved against its app: which components exist, how they
// are grouped into processes, and what carries calls between the groups.
// Resolve builds it and checks everything a deployment needs, so that a
// deployer can start processes knowing the spec is sound.
type Topology struct {
	App    *App
	Config Config
	// Transport carries calls across groups and into the entry component.
	Transport string
	// Network is the listener network of the transport, "tcp" or "unix";
	// empty when the transport cannot leave the process (inproc).
	Network string
	// HTTPCodec is how the http transport reads and writes JSON
	// (deploy.http_codec): spec.HTTPCodecFast or spec.HTTPCodecProtojson.
	// Hosts and the client of the entry pass it to the transport as
	// transport.ServerOptions.Codec and DialOptions.Codec.
	HTTPCodec string
	// HTTPLimits are deploy.http_limits, for the gateway and every server
	// of the http transport.
	HTTPLimits transport.HTTPLimits
	// Placement is the name of the chosen placement.
	Placement string
	Groups    []Group
	// Entry names the component clients call.
	Entry string
	// StartTimeout bounds how long a deployment may take to become ready.
	StartTimeout time.Duration
	// Spec is the (effective) spec the topology was resolved from, for
	// deployers with [deploy] keys of their own (the netns deployer's
	// hosts and links); nil for a topology built otherwise.
	Spec *spec.Spec
	// Sidecar is the proxy program beside every process (deploy.sidecar,
	// spec.SidecarNone for none), and ProxyMode whether each process has
	// its own or all of a host's share one (deploy.proxy_mode).
	Sidecar, ProxyMode string
	// Balancer is deploy.balancer: how a caller spreads calls over a
	// group's replicas (scaling.go).
	Balancer string
	// Mesh are the in-process mesh features (deploy.mtls, deploy.tracing,
	// deploy.metrics).
	Mesh Mesh
	// Languages maps each component not implemented in Go to its language
	// (deploy.languages); see Language.
	Languages map[string]string
	// Faults are [deploy.faults], in the order latency_spike, reset,
	// link_cut, kill (faults.go).
	Faults []Fault

	components map[string]Component
}

// Group is a set of components that share one process.
type Group struct {
	// Name is the components joined with "+", e.g. "hop2+hop3".
	Name       string
	Components []string
	// Replicas is how many processes serve the group at the start (at
	// least 1); Autoscale, when set, changes it while the group runs
	// (scaling.go).
	Replicas  int
	Autoscale *Autoscale
	// Resources limit each process of the group (deploy.resources).
	Resources spec.Resources
}

// InProcess reports whether the transport cannot cross processes, so the
// entry is reachable only through the HTTP/JSON gateway.
func (p *Topology) InProcess() bool { return p.Network == "" }

// Component returns the named component.
func (p *Topology) Component(name string) (Component, bool) {
	c, ok := p.components[name]
	return c, ok
}

// GroupOf returns the index of the group that holds component name, or -1.
func (p *Topology) GroupOf(name string) int {
	for i, g := range p.Groups {
		if slices.Contains(g.Components, name) {
			return i
		}
	}
	return -1
}

// EntryGroup returns the index of the group holding the entry component.
func (p *Topology) EntryGroup() int { return p.GroupOf(p.Entry) }

// Exposed lists the components of group i that need a transport listener:
// the entry, and every component called from another group. Other
// components are reached only inproc.
func (p *Topology) Exposed(i int) []string {
	var out []string
	for _, name := range p.Groups[i].Components {
		if name == p.Entry && !p.InProcess() {
			out = append(out, name)
			continue
		}
		if p.calledFromOutside(i, name) {
			out = append(out, name)
		}
	}
	return out
}

func (p *Topology) calledFromOutside(group int, name string) bool {
	for j, g := range p.Groups {
		if j == group {
			continue
		}
		for _, caller := range g.Components {
			if slices.Contains(p.components[caller].Deps, name) {
				return true
			}
		}
	}
	return false
}

// Requests returns the app's default requests for its config.
func (p *Topology) Requests() []Request { return p.Config.Requests() }

// ConfigJSON is the app config as the host receives it.
func (p *Topology) ConfigJSON() (json.RawMessage, error) {
	b, err := json.Marshal(p.Config)
	if err != nil {
		return nil, fmt.Errorf("encode %s config: %w", p.App.Name, err)
	}
	return b, nil
}

// Resolve decodes the spec's [app] table into its app's config and resolves
// [deploy] against the app's components. Every error is a *spec.Error naming
// the key and line: an unknown app, transport or placement name, a bad app
// value, a component that is unknown, placed twice or not placed, and the
// inproc transport with more than one group. It reports every mistake it
// can find in one pass (see ResolvePartly).
func Resolve(s *spec.Spec) (*Topology, error) {
	p, err := ResolvePartly(s)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ResolvePartly is Resolve for a caller that checks more against the
// topology in the same pass (deploy.Resolve, a deployer's hosts): with
// the errors, it returns the topology too when its groups are known
// despite them, nil when they are not. Its checks run in three rounds,
// each but the first on what the one before found right: every mistake
// of [app] (decodeApp), with those of the transport and the placement's
// name; once [app] is right, those of the placement's groups; once the
// groups are known, those of the tables that name them, together. An
// app that places its own components (a Placer) is asked whatever its
// config's mistakes, to check what does not read them.
func ResolvePartly(s *spec.Spec) (*Topology, error) {
	app, cfg, appErr := decodeApp(s)
	if app == nil {
		return nil, appErr // no app, nothing to resolve against
	}
	var errs spec.Errors
	errs.Add(appErr)
	if pl, ok := cfg.(Placer); ok {
		p, err := pl.Place(s, appErr == nil)
		errs.AddLater(err)
		return p, errs.Err()
	}
	p := &Topology{
		App:       app,
		Config:    cfg,
		Transport: s.Deploy.Transport,
		HTTPCodec: s.Deploy.HTTPCodec,
		HTTPLimits: transport.HTTPLimits{
			MaxBodyBytes:      int64(s.Deploy.HTTPLimits.MaxBody),
			MaxHeaderBytes:    int(s.Deploy.HTTPLimits.MaxHeader),
			ReadHeaderTimeout: s.Deploy.HTTPLimits.ReadHeaderTimeout.D(),
			ReadTimeout:       s.Deploy.HTTPLimits.ReadTimeout.D(),
			IdleTimeout:       s.Deploy.HTTPLimits.IdleTimeout.D(),
		},
		Placement:    s.Deploy.Placement,
		StartTimeout: s.Deploy.StartTimeout.D(),
		Spec:         s,
		Sidecar:      s.Deploy.Sidecar,
		ProxyMode:    s.Deploy.ProxyMode,
		Mesh:         MeshOf(s.Deploy),
		components:   map[string]Component{},
	}
	if err := p.resolveTransport(s); err != nil {
		errs.AddLater(err)
		if p.Transport != inproc.Name && p.Network == "" {
			// The checks below ask whether calls cross processes: a
			// transport not known, or not written, would be a network
			// one, as only inproc is not.
			p.Network = "tcp"
		}
	}
	placeErr := p.checkPlacement(s)
	errs.AddLater(placeErr)
	if appErr != nil || placeErr != nil {
		// The components, which the rest of [deploy] names, are the
		// config's, and a config with a mistake has none to trust (a
		// negative chain.hops has none at all); the groups are the
		// placement's.
		return nil, errs.Err()
	}
	p.Entry = cfg.Entry()
	if err := p.indexComponents(); err != nil {
		return nil, err // a bug in the app, not in the spec
	}
	if err := p.resolveGroups(s); err != nil {
		errs.AddLater(err)
		return nil, errs.Err() // what follows names groups
	}
	errs.AddLater(p.checkInProcess(s))
	for _, resolve := range []func(*spec.Spec) error{p.resolveResources, p.resolveScaling, p.resolveFaults, p.resolveResilienceGroups, p.resolveLanguages} {
		errs.AddLater(resolve(s))
	}
	return p, errs.Err()
}

// resolveTransport checks deploy.transport and deploy.network and chooses
// the network.
func (p *Topology) resolveTransport(s *spec.Spec) error {
	if p.Transport == "" {
		return s.Errorf("deploy.transport", "must not be empty: write one of %s, or leave the key out for %q", strings.Join(Transports(), ", "), spec.DefaultTransport)
	}
	if p.Transport == inproc.Name {
		if s.Deploy.Network != "" {
			return s.Errorf("deploy.network", "transport %q has no network; leave deploy.network out", p.Transport)
		}
		return nil
	}
	tr, err := transport.Lookup(p.Transport)
	if err != nil {
		return s.Errorf("deploy.transport", "unknown transport %q (known: %s)", p.Transport, strings.Join(Transports(), ", "))
	}
	nets := tr.Networks()
	p.Network = nets[0]
	if s.Deploy.Network != "" {
		if !slices.Contains(nets, s.Deploy.Network) {
			return s.Errorf("deploy.network", "transport %q cannot listen on %q (it can on: %s)", p.Transport, s.Deploy.Network, strings.Join(nets, ", "))
		}
		p.Network = s.Deploy.Network
	}
	return nil
}

// resolveGroups makes the groups of the chosen placement.
func (p *Topology) resolveGroups(s *spec.Spec) error {
	groups, key := p.placementGroups(s)
	if errs := p.checkGroups(groups); len(errs) > 0 {
		out := make([]error, len(errs))
		for i, err := range errs {
			out[i] = s.Errorf(key, "%v", err)
		}
		return errors.Join(out...)
	}
	for _, g := range groups {
		p.Groups = append(p.Groups, Group{Name: strings.Join(g, "+"), Components: slices.Clone(g)})
	}
	return nil
}

// checkInProcess refuses a transport that cannot cross processes for a
// placement of several groups.
func (p *Topology) checkInProcess(s *spec.Spec) error {
	if p.Transport == inproc.Name && len(p.Groups) > 1 {
		return s.Errorf("deploy.transport", "transport %q cannot cross processes, but placement %q has %d groups; use placement %q or a network transport (%s)",
			p.Transport, p.Placement, len(p.Groups), PlacementMonolith, strings.Join(transport.Names(), ", "))
	}
	return nil
}

// CheckApp checks the spec's [app] table alone, as Resolve does first:
// the app it names and the app's own keys. It reports those mistakes of a
// spec whose [deploy] is wrong, which Resolve cannot take.
func CheckApp(s *spec.Spec) error {
	_, _, err := decodeApp(s)
	return err
}

// DecodeApp decodes and checks the [app] table of s into the config of the
// app it names, every error at its key and line, without resolving
// [deploy]: for a command that shows an app's config (svclab synth show).
func DecodeApp(s *spec.Spec) (Config, error) {
	_, cfg, err := decodeApp(s)
	return cfg, err
}

// decodeApp looks up the app s names and decodes [app] into its config.
// When only the app's keys are wrong, it returns the app and the config
// as far as it decoded, with the errors of the keys and of the values
// that decoded (the app's Validate), so that Resolve can go on.
func decodeApp(s *spec.Spec) (*App, Config, error) {
	if s.App.Name == "" {
		return nil, nil, s.Errorf("app.name", "missing: name the app (known: %s)", strings.Join(Apps(), ", "))
	}
	app, err := Lookup(s.App.Name)
	if err != nil {
		return nil, nil, s.Errorf("app.name", "%v", err)
	}
	cfg := app.NewConfig()
	var errs spec.Errors
	errs.Add(s.Decode("app", cfg))
	errs.AddLater(s.Locate("app", cfg.Validate()))
	return app, cfg, errs.Err()
}

// indexComponents checks the app's own component list, whose mistakes are
// bugs in the app rather than in the spec.
func (p *Topology) indexComponents() error {
	comps := p.Config.Components()
	for _, c := range comps {
		if c.Name == "" || c.Service == nil || c.New == nil {
			return fmt.Errorf("app %s: component %q lacks a name, service or constructor", p.App.Name, c.Name)
		}
		if _, dup := p.components[c.Name]; dup {
			return fmt.Errorf("app %s: two components named %q", p.App.Name, c.Name)
		}
		p.components[c.Name] = c
	}
	for _, c := range comps {
		for _, d := range c.Deps {
			if _, ok := p.components[d]; !ok {
				return fmt.Errorf("app %s: component %s depends on unknown component %q", p.App.Name, c.Name, d)
			}
		}
	}
	if _, ok := p.components[p.Entry]; !ok {
		return fmt.Errorf("app %s: entry component %q does not exist", p.App.Name, p.Entry)
	}
	return nil
}

// componentNames lists the components in the app's order.
func (p *Topology) componentNames() []string {
	var names []string
	for _, c := range p.Config.Components() {
		names = append(names, c.Name)
	}
	return names
}

// checkPlacement checks the name of the placement, which needs no
// component: a built-in name redefined, an empty name, or one that is
// neither built in nor in deploy.placements.
func (p *Topology) checkPlacement(s *spec.Spec) error {
	// The built-in names are reserved: a redefinition would make
	// "monolith" mean several processes in one spec and one in the next.
	for _, name := range slices.Sorted(maps.Keys(s.Deploy.Placements)) {
		switch name {
		case PlacementMonolith, PlacementSplit:
			return s.Errorf("deploy.placements."+name, "%q is a built-in placement and cannot be redefined; give yours another name", name)
		}
	}
	if p.Placement == "" {
		return s.Errorf("deploy.placement", "must not be empty: name a placement, or leave the key out for %q", spec.DefaultPlacement)
	}
	if _, ok := s.Deploy.Placements[p.Placement]; ok || p.Placement == PlacementMonolith || p.Placement == PlacementSplit {
		return nil
	}
	known := []string{PlacementMonolith, PlacementSplit}
	for k := range s.Deploy.Placements {
		if !slices.Contains(known, k) {
			known = append(known, k)
		}
	}
	sort.Strings(known[2:])
	return s.Errorf("deploy.placement", "unknown placement %q (known: %s)", p.Placement, strings.Join(known, ", "))
}

// placementGroups returns the groups of the placement checkPlacement
// passed, and the spec key that errors about them should name.
func (p *Topology) placementGroups(s *spec.Spec) ([][]string, string) {
	if g, ok := s.Deploy.Placements[p.Placement]; ok {
		return g, "deploy.placements." + p.Placement
	}
	names := p.componentNames()
	if p.Placement == PlacementMonolith {
		return [][]string{names}, "deploy.placement"
	}
	var g [][]string // split
	for _, n := range names {
		g = append(g, []string{n})
	}
	return g, "deploy.placement"
}

// checkGroups checks that groups place every component exactly once,
// and returns every way they do not.
func (p *Topology) checkGroups(groups [][]string) []error {
	if len(groups) == 0 {
		return []error{fmt.Errorf("placement %q has no groups", p.Placement)}
	}
	names := p.componentNames()
	where := map[string]int{}
	var errs []error
	for i, g := range groups {
		if len(g) == 0 {
			errs = append(errs, fmt.Errorf("group %d of placement %q is empty", i+1, p.Placement))
		}
		for _, c := range g {
			if _, ok := p.components[c]; !ok {
				errs = append(errs, fmt.Errorf("unknown component %q (app %s has: %s)", c, p.App.Name, strings.Join(names, ", ")))
				continue
			}
			if j, dup := where[c]; dup {
				if j == i {
					errs = append(errs, fmt.Errorf("component %q is listed twice in group %d", c, i+1))
				} else {
					errs = append(errs, fmt.Errorf("component %q is placed twice, in groups %d and %d", c, j+1, i+1))
				}
				continue
			}
			where[c] = i
		}
	}
	var missing []string
	for _, n := range names {
		if _, ok := where[n]; !ok {
			missing = append(missing, n)
		}
	}
	// An unknown component is likely a placed one misspelt.
	if len(missing) > 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s %s not placed: every component of app %s must be in exactly one group", english.Noun(len(missing), "component"), strings.Join(missing, ", "), p.App.Name))
	}
	return errs
}

// Transports lists the values deploy.transport accepts: inproc and every
// registered network transport.
func Transports() []string {
	return append([]string{inproc.Name}, transport.Names()...)
}
