package program

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// deployers are the deployers that run programs: the local deployer
// starts them on this machine, the netns deployer on its emulated
// machines (through the local deployer, network.go), the kube deployer
// from images.
var deployers = []string{"local", "netns", "kube"}

// Place makes the exec app a runtime.Placer: one group per program (a
// program is a process of its own), over the protocol each speaks. What
// cannot apply to a program svclab did not write is refused at its key,
// every mistake at once. The groups are the programs whatever [deploy]
// says, so the topology comes back with these errors, for the checks
// against it that do not depend on them (a deployer's hosts, this
// machine's commands); with a config that has mistakes (valid false),
// the protocols are not compared, as they may be among them, and there
// is no topology without an entry to reach it by.
func (cfg *Config) Place(s *spec.Spec, valid bool) (*runtime.Topology, error) {
	var errs []error
	if !slices.Contains(deployers, s.Deploy.Deployer) {
		errs = append(errs, s.Errorf("deploy.deployer", "app %s runs its programs with deployer %s; deployer %q cannot start them", AppName, strings.Join(deployers, " or "), s.Deploy.Deployer))
	}
	errs = append(errs, checkPlacement(s, cfg), checkUnsupported(s), checkNetwork(s, cfg))
	if valid {
		errs = append(errs, checkTransport(s, cfg), checkLoadProtocol(s, cfg))
	}
	for _, name := range cfg.Names() {
		p := cfg.Programs[name]
		switch {
		case s.Deploy.Deployer != "kube" && len(p.Command) == 0:
			errs = append(errs, s.Errorf("app.components."+name, "has an image and no command: the %s deployer runs a command; add one (image is the kube deployer's)", s.Deploy.Deployer))
		case s.Deploy.Deployer == "kube" && p.Image == "":
			errs = append(errs, s.Errorf("app.components."+name, "has no image: the kube deployer runs a program from an image (image = \"…\", and port)"))
		case s.Deploy.Deployer == "kube" && p.Port == 0:
			errs = append(errs, s.Errorf("app.components."+name+".image", "has no port: write port, the port %s listens on", p.Image))
		}
	}
	var all spec.Errors
	all.Add(errors.Join(errs...))
	entry := cfg.Programs[cfg.EntryName]
	if entry == nil {
		// No topology, so no CheckMachine after this: the programs'
		// commands and directories, which do not depend on the entry,
		// are checked here for the deployers that run them on this
		// machine, beside the entry's mistake.
		if s.Deploy.Deployer == "local" || s.Deploy.Deployer == "netns" {
			all.Add(checkPrograms(s, cfg))
		}
		return nil, all.Err()
	}
	topo := &runtime.Topology{
		App:          mustApp(),
		Config:       cfg,
		Transport:    entry.Protocol,
		Network:      cmp.Or(s.Deploy.Network, "tcp"),
		Placement:    runtime.PlacementSplit,
		Entry:        cfg.EntryName,
		StartTimeout: s.Deploy.StartTimeout.D(),
		Spec:         s,
		Sidecar:      spec.SidecarNone,
		// The programs' own sidecars carry these (sidecars.go), which
		// checkUnsupported refuses without them.
		Mesh: runtime.Mesh{MTLS: s.Deploy.MTLS, Tracing: s.Deploy.Tracing, Metrics: s.Deploy.Metrics},
	}
	for _, name := range cfg.Names() {
		topo.Groups = append(topo.Groups, runtime.Group{Name: name, Components: []string{name}, Replicas: 1})
	}
	calls := map[string][]string{}
	for _, name := range cfg.Names() {
		calls[name] = cfg.Programs[name].Deps()
	}
	// These read keys the checks above may have refused.
	all.AddLater(topo.ResolveSizes(s))
	all.AddLater(topo.ResolveFaults(s, calls))
	return topo, all.Err()
}

func mustApp() *runtime.App {
	a, err := runtime.Lookup(AppName)
	if err != nil {
		panic(err) // registered in init
	}
	return a
}

// checkTransport refuses a deploy.transport that is not what the
// programs speak: svclab carries no call between programs, so it cannot
// change their protocol.
func checkTransport(s *spec.Spec, cfg *Config) error {
	if !s.Written("deploy.transport") {
		return nil
	}
	t := s.Deploy.Transport
	if t == "inproc" {
		return s.Errorf("deploy.transport", "%q runs components as calls inside one process, but each component of app %s is a program of its own; leave deploy.transport out", t, AppName)
	}
	for _, name := range cfg.Names() {
		if p := cfg.Programs[name].Protocol; p != t {
			key := "app.components." + name + ".protocol"
			return s.Errorf("deploy.transport", "component %s speaks %s (%s%s), and svclab cannot make a program speak %s; leave deploy.transport out", name, p, key, s.Origin(key), t)
		}
	}
	return nil
}

// checkPlacement refuses a placement that puts two programs in one
// process.
func checkPlacement(s *spec.Spec, cfg *Config) error {
	name := s.Deploy.Placement
	if groups, ok := s.Deploy.Placements[name]; ok {
		for _, g := range groups {
			if len(g) > 1 {
				return s.Errorf("deploy.placements."+name, "puts %s in one process, but each component of app %s is a program that runs as a process of its own; give each its own group", strings.Join(g, " and "), AppName)
			}
		}
		return nil
	}
	if s.Written("deploy.placement") && name != runtime.PlacementSplit {
		return s.Errorf("deploy.placement", "%q would put programs together in one process, but each component of app %s is a program that runs as a process of its own; leave deploy.placement out (it is %q for programs)", name, AppName, runtime.PlacementSplit)
	}
	return nil
}

// unsupported are the [deploy] keys that do not apply to programs, with
// why.
var unsupported = []struct{ key, why string }{
	{"deploy.http_codec", "it is how svclab's own hosts encode JSON; a program encodes its own"},
	{"deploy.http_limits", "they bound svclab's own HTTP servers; a program has its own limits"},
	{"deploy.languages", "it chooses the implementation of svclab's reference components; a program is its own implementation"},
	{"deploy.resilience", "it is the retries and timeouts of svclab's own hosts; a program makes its own calls"},
	{"deploy.balancer", "what balances over a program's replicas (the front, or the callers' sidecars) does so round robin, per request (per connection for tcp)"},
	{"deploy.proxy_mode", "each replica of a program has sidecars of its own; a node proxy for programs is not supported yet"},
}

// checkUnsupported refuses, at its key, each [deploy] key that does not
// apply to programs.
func checkUnsupported(s *spec.Spec) error {
	var errs []error
	for _, u := range unsupported {
		if key, ok := s.FirstWritten(u.key); ok {
			errs = append(errs, s.Errorf(key, "does not apply to app %s: %s; leave it out", AppName, u.why))
		}
	}
	sidecars := s.Deploy.Sidecar != "" && s.Deploy.Sidecar != spec.SidecarNone
	if sidecars && !slices.Contains(sidecarKinds, s.Deploy.Sidecar) {
		errs = append(errs, s.Errorf("deploy.sidecar", "programs have %s sidecars alone, not %q yet", strings.Join(sidecarKinds, " or "), s.Deploy.Sidecar))
	}
	if key, ok := s.FirstWritten("deploy.autoscale"); ok && s.Deploy.Deployer == "kube" {
		errs = append(errs, s.Errorf(key, "the kube deployer renders a program's replicas, not an autoscaler for it, yet; leave [deploy.autoscale] out or use deploy.deployer = \"local\""))
	}
	if sidecars {
		return errors.Join(errs...) // the proxies carry every mesh key
	}
	for _, key := range runtime.MeshOf(s.Deploy).Keys() {
		errs = append(errs, s.Errorf(key, "does not apply to app %s without sidecars: %s is a feature of svclab's own hosts, which a program has not: set deploy.sidecar = \"envoy\", whose proxies carry it", AppName, key))
	}
	return errors.Join(errs...)
}

// Of returns the exec config of topo, or nil when topo is another app's.
func Of(topo *runtime.Topology) *Config {
	if topo == nil || topo.App == nil || topo.App.Name != AppName {
		return nil
	}
	cfg, _ := topo.Config.(*Config)
	return cfg
}

// CheckMachine is the local deployer's check, before anything starts,
// that this machine has every program's command and working directory;
// every mistake at once, at its key.
func CheckMachine(s *spec.Spec, topo *runtime.Topology) error {
	cfg := Of(topo)
	if cfg == nil {
		return nil
	}
	return checkPrograms(s, cfg)
}

// checkPrograms is CheckMachine's check of cfg's programs.
func checkPrograms(s *spec.Spec, cfg *Config) error {
	specDir, err := filepath.Abs(filepath.Dir(s.Path))
	if err != nil {
		return fmt.Errorf("the spec's directory: %w", err)
	}
	var errs []error
	for _, name := range cfg.Names() {
		p := cfg.Programs[name]
		if p == nil {
			continue
		}
		key := "app.components." + name + "."
		dir := p.WorkDir(specDir)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			errs = append(errs, s.Errorf(key+"dir", "%s is not a directory (dir is relative to the spec's directory, %s)", dir, specDir))
			continue
		}
		if len(p.Command) == 0 || p.Command[0] == "" || templateRE.MatchString(p.Command[0]) {
			continue
		}
		if _, err := lookCommand(p.Command[0], dir); err != nil {
			errs = append(errs, s.Errorf(key+"command", "command %q not found: %v", p.Command[0], err))
		}
	}
	return errors.Join(errs...)
}

// checkLoadProtocol checks that [load] drives the entry over what it
// speaks: load.protocol defaults to http, so a grpc or h2c entry needs
// it written.
func checkLoadProtocol(s *spec.Spec, cfg *Config) error {
	entry := cfg.Programs[cfg.EntryName]
	if entry == nil {
		return nil
	}
	if _, ok := s.Lookup("load"); !ok {
		return nil
	}
	v, _ := s.Lookup("load.protocol")
	got, _ := v.(string)
	if got == "" {
		got = ProtoHTTP
	}
	if got == entry.Protocol {
		return nil
	}
	key := "app.components." + cfg.EntryName + ".protocol"
	return s.Errorf("load.protocol", "is %q, but the entry %s speaks %s (%s%s): set load.protocol = %q", got, cfg.EntryName, entry.Protocol, key, s.Origin(key), entry.Protocol)
}
