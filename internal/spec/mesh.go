package spec

import (
	"fmt"
	"math"
	"slices"
)

// The values of deploy.telemetry_cpus: where the run's telemetry backends
// (Jaeger for deploy.tracing, Prometheus for deploy.metrics) run when
// experiment.isolation splits the CPUs.
const (
	// TelemetryCPUsSystem runs them on the system under test's CPUs, as
	// a collector on the same node as the services: their ingest is
	// part of what the mesh costs the hops.
	TelemetryCPUsSystem = "system"
	// TelemetryCPUsGenerator runs them on the load generator's CPUs, as
	// a collector on a machine of its own: the hops pay only for making
	// and sending spans and metrics.
	TelemetryCPUsGenerator = "generator"
)

// TelemetryCPUsOptions lists the values of deploy.telemetry_cpus, the
// default first.
var TelemetryCPUsOptions = []string{TelemetryCPUsSystem, TelemetryCPUsGenerator}

// tracingRatio says what deploy.tracing holds.
const tracingRatio = "a sampling ratio from 0.0 (off) to 1.0 (every request)"

// numberHints says, for a key whose number a user may write as another
// type (deploy.tracing = true, as for the other mesh keys), what the
// number means.
var numberHints = map[string]string{
	"deploy.tracing": "; deploy.tracing is " + tracingRatio + ", the share of requests traced: write 1.0 to trace every one",
}

// checkMesh checks the mesh keys of [deploy]: deploy.mtls and
// deploy.metrics are booleans (Decode checks those), deploy.tracing is a
// sampling ratio, the share of requests whose traces are kept, and
// deploy.telemetry_cpus names CPUs that experiment.isolation can give.
func (s *Spec) checkMesh() error {
	if r := s.Deploy.Tracing; math.IsNaN(r) || r < 0 || r > 1 {
		return s.Errorf("deploy.tracing", "must be %s, got %v", tracingRatio, r)
	}
	if !s.written("deploy.telemetry_cpus") {
		s.Deploy.TelemetryCPUs = TelemetryCPUsSystem
	}
	switch v := s.Deploy.TelemetryCPUs; {
	case !slices.Contains(TelemetryCPUsOptions, v):
		return s.Errorf("deploy.telemetry_cpus", "must be %q (the system under test's CPUs) or %q (the load generator's), got %q", TelemetryCPUsSystem, TelemetryCPUsGenerator, v)
	case v == TelemetryCPUsGenerator && s.isolationOff():
		return s.Errorf("deploy.telemetry_cpus", "%q needs the CPUs split: experiment.isolation is %q%s, so the generator has no CPUs of its own", v, IsolationNone, s.Origin("experiment.isolation"))
	}
	return nil
}

// isolationOff reports whether the spec turns experiment.isolation off. It
// reads the key, not s.Experiment, which [deploy] is decoded before.
func (s *Spec) isolationOff() bool {
	v, _ := s.Lookup("experiment.isolation")
	return v == IsolationNone
}

// Inert lists the keys a spec sets that do nothing in it, each with why:
// they are not errors (a full factorial may well cross them with the key
// they wait for), but a design point where they change nothing measures
// the same system twice, and a user should hear so before it runs.
func (s *Spec) Inert() []string {
	var out []string
	sidecars := s.Deploy.Sidecar != "" && s.Deploy.Sidecar != SidecarNone
	if s.Deploy.ProxyMode == ProxyModeNode && !sidecars {
		out = append(out, fmt.Sprintf("deploy.proxy_mode = %q does nothing without deploy.sidecar: no proxy runs", ProxyModeNode))
	}
	if s.Deploy.TelemetryCPUs == TelemetryCPUsGenerator && s.Deploy.Tracing == 0 && !s.Deploy.Metrics {
		out = append(out, fmt.Sprintf("deploy.telemetry_cpus = %q places nothing: neither deploy.tracing nor deploy.metrics starts a backend", TelemetryCPUsGenerator))
	}
	if n, _ := s.Lookup("load.requests"); n != nil && n != int64(0) {
		for _, key := range s.Deploy.Faults.startKeys() {
			out = append(out, fmt.Sprintf("%s may not act: load.requests can end the measurement before it starts", key))
		}
	}
	return out
}
