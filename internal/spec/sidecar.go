package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The values of deploy.sidecar: no proxy, or the real proxy program that
// runs beside every process as a mesh's data plane.
const (
	SidecarNone    = "none"
	SidecarEnvoy   = "envoy"
	SidecarNginx   = "nginx"
	SidecarHAProxy = "haproxy"
)

// Sidecars lists the values of deploy.sidecar, the default first.
var Sidecars = []string{SidecarNone, SidecarEnvoy, SidecarNginx, SidecarHAProxy}

// The values of deploy.proxy_mode: one proxy per process (Istio's
// sidecars), or one per host that all its processes share (Istio
// ambient's ztunnel).
const (
	ProxyModeSidecar = "sidecar"
	ProxyModeNode    = "node"
)

// SidecarIstio is the value of deploy.sidecar that leaves the data plane
// to Istio: the cluster injects its proxy beside every pod, and the mesh
// keys become Istio resources. Only a deployer that runs pods on a
// cluster has it (deploy.Resolve refuses it for the others), as no local
// process can be given an Istio sidecar.
const SidecarIstio = "istio"

// ProxyModes lists the values of deploy.proxy_mode, the default first.
var ProxyModes = []string{ProxyModeSidecar, ProxyModeNode}

// checkSidecar fills deploy.sidecar and deploy.proxy_mode when left out
// and checks their values and the transport they must carry. Whether the
// proxy program is installed is the deployer's check (it knows where to
// look), made before anything starts as well.
func (s *Spec) checkSidecar() error {
	d := &s.Deploy
	if !s.written("deploy.sidecar") {
		d.Sidecar = SidecarNone
	}
	if d.Sidecar != SidecarIstio && !slices.Contains(Sidecars, d.Sidecar) {
		return s.Errorf("deploy.sidecar", "unknown sidecar %q%s", d.Sidecar, suggestValue(d.Sidecar, append(slices.Clip(Sidecars), SidecarIstio)))
	}
	if !s.written("deploy.proxy_mode") {
		d.ProxyMode = ProxyModeSidecar
	}
	if !slices.Contains(ProxyModes, d.ProxyMode) {
		return s.Errorf("deploy.proxy_mode", "unknown proxy mode %q%s", d.ProxyMode, suggestValue(d.ProxyMode, ProxyModes))
	}
	if d.Sidecar == SidecarNone {
		return nil
	}
	if d.Transport == "inproc" {
		return s.Errorf("deploy.sidecar", "sidecar %q needs a network transport, but deploy.transport is \"inproc\", which never leaves its process; choose grpc, http, netrpc or protorpc, or sidecar \"none\"", d.Sidecar)
	}
	if d.Sidecar == SidecarIstio {
		// Istio's sidecars balance each request, so replicas and the
		// autoscaler stay allowed, and pods listen on TCP.
		return nil
	}
	if len(d.Autoscale) > 0 && d.ProxyMode != ProxyModeSidecar {
		// Every sidecar kind takes endpoint updates while it runs, but a
		// node proxy has a listener per replica it started with.
		return s.Errorf("deploy.autoscale."+slices.Sorted(maps.Keys(d.Autoscale))[0], "replicas that change while the proxies run need deploy.proxy_mode = \"sidecar\" (got %q); a node proxy serves a fixed count of replicas (deploy.replicas)", d.ProxyMode)
	}
	if d.Network == "unix" {
		return s.Errorf("deploy.network", "sidecars listen on loopback TCP, as Istio's do; leave deploy.network out or set deploy.sidecar = \"none\"")
	}
	return nil
}

// suggestValue is didYouMean for a value rather than a key: the near
// miss, or every valid value.
func suggestValue(got string, valid []string) string {
	if hint := didYouMean(got, valid); strings.HasPrefix(hint, " (did you mean") {
		return hint
	}
	return fmt.Sprintf(" (valid: %s)", strings.Join(valid, ", "))
}
