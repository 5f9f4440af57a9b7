package kube

import (
	"fmt"
	"maps"
	"slices"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// Notes lists what s asks for that the rendered objects do not do as the
// local deployer would, one sentence each, naming the key: `svclab kube
// render` prints them in its header, and a deployer may refuse them.
func Notes(s *spec.Spec, topo *runtime.Topology) []string {
	d := s.Deploy
	keys, _ := KeysOf(s) // their mistakes are Render's to report
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if keys.Image == "" {
		add("deploy.kube.image is not set: the pods run %q; push one with `svclab image --push` and name it", DefaultImage)
	}
	if d.Network == "unix" {
		add("deploy.network = \"unix\": pods reach each other over TCP only")
	}
	switch d.Sidecar {
	case spec.SidecarNone, spec.SidecarIstio:
	default:
		add("deploy.sidecar = %q is a local proxy program and is not rendered; on a cluster choose \"istio\"", d.Sidecar)
	}
	if d.Sidecar == spec.SidecarIstio {
		// The Telemetry takes the spec's values, whose defaults (tracing 0,
		// metrics off) are not Istio's (1% sampling, metrics on): a user who
		// only turned Istio on should see that the mesh records nothing.
		if _, set := s.Lookup("deploy.tracing"); !set {
			add("deploy.tracing is not set: the Telemetry samples 0%% of requests, svclab's default (Istio's own is 1%%); set deploy.tracing (0.01 is Istio's) to trace")
		}
		if _, set := s.Lookup("deploy.metrics"); !set {
			add("deploy.metrics is not set: the Telemetry turns Istio's metrics off, svclab's default; set deploy.metrics = true to keep Istio's standard metrics")
		}
	} else {
		if d.MTLS {
			add("deploy.mtls without deploy.sidecar = \"istio\" is not rendered: the in-process mTLS needs the local deployer's per-run CA")
		}
		if d.Tracing > 0 {
			add("deploy.tracing without deploy.sidecar = \"istio\" is not rendered: the in-process tracing needs the local deployer's collector")
		}
		if d.Metrics {
			add("deploy.metrics without deploy.sidecar = \"istio\" is not rendered: the in-process metrics need the local deployer's Prometheus")
		}
	}
	for _, g := range topo.Groups {
		if a := g.Autoscale; a != nil && a.SyncPeriod.D() != spec.DefaultSyncPeriod {
			add("deploy.autoscale %s: sync_period %s is kube-controller-manager's --horizontal-pod-autoscaler-sync-period, one for the whole cluster, and is not rendered", g.Name, a.SyncPeriod)
		}
	}
	for c, lang := range topo.Languages {
		if lang != runtime.LangGo {
			add("deploy.languages: %s runs its Go implementation, as the svclab image holds no %s host", c, lang)
		}
	}
	if ing := runtime.IngressOf(topo); ing != "" {
		add("app.ingress = %q is not rendered: the load pods call the entry's Service", ing)
	}
	for _, b := range runtime.BackingsOf(topo) {
		switch b.Kind {
		case runtime.BackingPostgres:
			add("backing service %q runs the image %s, one pod, seeded from the app's setup SQL", b.Name, backingImage(keys, b.Kind))
		case runtime.BackingRedis:
			add("backing service %q runs the image %s, one pod, empty at the start of each run", b.Name, backingImage(keys, b.Kind))
		}
	}
	if _, ok := s.Lookup("load"); !ok {
		add("the spec has no [load] table: no load Job is rendered")
	} else if n := localGenerators(s); n > 1 {
		add("load.generators = %d is the local deployer's and is not rendered: on a cluster deploy.kube.generators (%d) load pods share the load", n, keys.Generators)
	}
	if d.Faults.Any() {
		add("[deploy.faults] is not rendered, and a run on a cluster refuses it: the faults act through the local and netns deployers' proxies and processes")
	}
	if _, set := s.Lookup("deploy.balancer"); set {
		add("deploy.balancer = %q is not rendered: each host sees a peer as its Service's one address, spread by kube-proxy per connection (Istio: per request)", d.Balancer)
	}
	if d.TelemetryCPUs == spec.TelemetryCPUsGenerator && (d.Tracing > 0 || d.Metrics) {
		add("deploy.telemetry_cpus = %q places this machine's Jaeger and Prometheus on the load generator's CPUs and is not rendered: a cluster's collectors run where its operators put them", d.TelemetryCPUs)
	}
	if s.Experiment.Isolation == spec.IsolationCPUSet {
		add("experiment.isolation = %q divides this machine's CPUs between a local load generator and the hosts; on a cluster both are pods on the nodes, which it does not place", spec.IsolationCPUSet)
	}
	if hosts, _ := deploy.MachinesOf(s); len(hosts) > 0 {
		add("deploy.hosts: each host's groups run on nodes labelled %s=<host> (`kubectl label node NODE %s=%s`); the hosts' cpus, memory and exclusive and the links are the netns deployer's emulation and are not rendered", LabelHost, LabelHost, slices.Sorted(maps.Keys(hosts))[0])
	}
	return out
}

// localGenerators is load.generators, 0 when it is not set or the [load]
// table does not decode (the render reports that).
func localGenerators(s *spec.Spec) int {
	var cfg load.Config
	if err := s.Decode("load", &cfg); err != nil || cfg.Generators == nil {
		return 0
	}
	return *cfg.Generators
}
