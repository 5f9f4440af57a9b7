package external

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Why keys of [deploy] that act on what svclab starts do nothing here.
const (
	noApp       = "places or carries the components of an app that svclab runs; the external system's processes and wiring are its own"
	noProcesses = "acts on processes svclab starts, and it starts none here: pass the value to setup through a key of your own, e.g. {deploy.external.replicas}"
	noMesh      = "is the mesh svclab builds around the processes it starts; the external system has its own, or none"
	noHosts     = "emulates the machines and links of processes svclab starts; the external system runs where it runs"
	noFaults    = "acts on the processes and hops svclab starts, and it starts none here"
)

// refused are the keys of [deploy] that make no sense for a system svclab
// did not start, each with the reason.
var refused = []struct{ key, why string }{
	{"deploy.placement", noApp},
	{"deploy.placements", noApp},
	{"deploy.transport", noApp + "; the url's scheme says how the load speaks to it"},
	{"deploy.network", noApp},
	{"deploy.http_codec", noApp},
	{"deploy.http_limits", noApp},
	{"deploy.languages", noApp},
	{"deploy.replicas", noProcesses},
	{"deploy.autoscale", noProcesses},
	{"deploy.resources", noProcesses},
	{"deploy.sidecar", noMesh},
	{"deploy.proxy_mode", noMesh},
	{"deploy.balancer", noMesh},
	{"deploy.mtls", noMesh},
	{"deploy.tracing", noMesh},
	{"deploy.metrics", noMesh},
	{"deploy.telemetry_cpus", noMesh},
	{"deploy.resilience", noMesh},
	{"deploy.hosts", noHosts},
	{"deploy.link", noHosts},
	{"deploy.links", noHosts},
	{"deploy.faults", noFaults},
	{"deploy.kube", "renders an app for a Kubernetes cluster; the external system is not svclab's to render"},
}

// checkSpec is Traits.CheckSpec: what a design point asks of the external
// deployer, every mistake at once, each at its key. The errors of Keys'
// own values are KeysOf's (DecodeKeys), which Resolve has added before:
// every check here runs beside them, and only what reads a value KeysOf
// refused (Keys.failed) leaves out what it would say of it.
func checkSpec(s *spec.Spec, _ *runtime.Topology) error {
	k, _ := KeysOf(s) // its errors are DecodeKeys'
	var errs []error
	if _, written := s.Lookup("app"); written {
		errs = append(errs, s.Errorf("app", "does not apply to deploy.deployer = %q, which deploys no app: svclab drives the system at deploy.external.url; remove [app]", Name))
	}
	for _, r := range refused {
		if key, ok := s.FirstWritten(r.key); ok {
			errs = append(errs, s.Errorf(key, "does not apply to deploy.deployer = %q: it %s", Name, r.why))
		}
	}
	errs = append(errs, checkURL(s, k), checkLoad(s, k))
	errs = append(errs, checkCommands(s, k)...)
	errs = append(errs, checkUserKeys(s, k)...)
	for _, n := range k.Processes {
		if n.Pattern == "" && !pidExists(n.PID) {
			errs = append(errs, s.Errorf(Table+".processes", "no process %d runs now, and a PID cannot be started by setup (name its command line instead, e.g. \"nginx: worker\")", n.PID))
		}
	}
	return errors.Join(errs...)
}

// checkURL requires the url; experiment.CheckRemote keeps it on this
// machine (Traits.Targets), as it does load.target.
func checkURL(s *spec.Spec, k *Keys) error {
	if k.URL != "" {
		return nil
	}
	raw, _ := s.Lookup(Table)
	t, isTable := raw.(map[string]any)
	if _, written := t["url"]; written || (raw != nil && !isTable) {
		return nil // KeysOf said what is wrong with it, or with the table
	}
	const msg = "needs url, where the system answers, e.g. url = \"http://127.0.0.1:8080\""
	for name := range t {
		if nearKnown(name, []string{"url"}) != "" {
			// Likely the url misspelt, which KeysOf refused if it
			// is not a scalar: a later check leaves this out then.
			return s.Errorf(Table, msg)
		}
	}
	// No key of the table stands for the url: the table misses it
	// whatever else is wrong in it.
	return s.NameErrorf(Table, msg)
}

// checkLoad checks that [load] says what to send, to the url, in its
// protocol: svclab knows none of the system's requests.
func checkLoad(s *spec.Spec, k *Keys) error {
	var errs []error
	if s.Written("load.target") {
		errs = append(errs, s.Errorf("load.target", "the load's target is deploy.external.url with deploy.deployer = %q; remove load.target", Name))
	}
	if !s.Written("load.request") && !s.Written("load.flow") {
		at := "load"
		if !s.Written(at) {
			at = "deploy.deployer"
		}
		errs = append(errs, s.Errorf(at, "the external system's requests are not svclab's to know: describe them in [load.request] or [load.flow] (docs/LOAD.md)"))
	}
	if k.protocol == "" {
		// No url, or one KeysOf refused: its protocol is not known.
		return errors.Join(errs...)
	}
	want := k.Protocol()
	if v, ok := s.Lookup("load.protocol"); ok {
		if got, _ := v.(string); got != want && !(want == protoHTTP && got == protoH2C) {
			errs = append(errs, s.Errorf("load.protocol", "is %q, but deploy.external.url %s is a %s server: write %q, or leave the key out to take it from the url", got, k.URL, want, want))
		}
	} else if want != protoHTTP {
		errs = append(errs, s.Errorf(Table+".url", "is a %s server, which [load] drives with load.protocol = %q: add that key", want, want))
	}
	return errors.Join(errs...)
}

// checkCommands expands setup and teardown with the design point's
// levels and checks that their programs can run: every template that
// names no key, and the program whatever its arguments' templates say.
func checkCommands(s *spec.Spec, k *Keys) []error {
	dir, err := filepath.Abs(filepath.Dir(s.Path))
	if err != nil {
		return []error{s.Errorf(Table, "the spec's directory: %v", err)}
	}
	var errs []error
	for _, c := range []struct {
		key  string
		argv []string
	}{{"setup", k.Setup}, {"teardown", k.Teardown}} {
		key := Table + "." + c.key
		for i, a := range c.argv {
			arg, bad := expandArg(s, i, a)
			for _, err := range bad {
				errs = append(errs, s.Errorf(key, "%v", err))
			}
			if i == 0 && len(bad) == 0 {
				if err := lookCommand(arg, dir); err != nil {
					errs = append(errs, s.Errorf(key, "%v", err))
				}
			}
		}
	}
	return errs
}

// checkUserKeys refuses a key of the user's that no template names: it
// would change nothing, and is most likely a known key misspelt.
func checkUserKeys(s *spec.Spec, k *Keys) []error {
	if k.failed["setup"] || k.failed["teardown"] {
		return nil // the templates of the one refused are not known
	}
	named := map[string]bool{}
	for _, r := range append(refs(k.Setup), refs(k.Teardown)...) {
		named[r] = true
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(k.User)) {
		key := Table + "." + name
		if named[key] {
			continue
		}
		hint := nearKnown(name, known)
		if hint == "" {
			hint = fmt.Sprintf(" (name it in setup as {%s} to pass it on)", key)
		}
		errs = append(errs, s.Errorf(key, "is none of %s, and neither setup nor teardown names it, so it changes nothing%s", strings.Join(known, ", "), hint))
	}
	return errs
}
