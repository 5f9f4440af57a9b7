package kube

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestYAMLCarriesNoStatus: the printed manifests hold what a user would
// apply, not the empty status and creation time of the Go types (an HPA's
// `desiredReplicas: 0`, `currentMetrics: null`), and still every object.
func TestYAMLCarriesNoStatus(t *testing.T) {
	src := chainSplit + "[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 60\n" + withLoad
	objs := render(t, src, RenderOptions{})
	y, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimPrefix(string(y), "---\n"), "---\n")
	if len(docs) != len(objs) {
		t.Fatalf("%d documents, want one per object (%d)", len(docs), len(objs))
	}
	kinds := map[string]bool{}
	for i, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		kinds[m["kind"].(string)] = true
		if _, ok := m["status"]; ok {
			t.Errorf("%s %s has a status: %v", m["kind"], objs[i].GetName(), m["status"])
		}
		if _, ok := m["metadata"].(map[string]any)["creationTimestamp"]; ok {
			t.Errorf("%s %s has a creationTimestamp", m["kind"], objs[i].GetName())
		}
		if strings.Contains(d, ": null") {
			t.Errorf("%s %s has null fields:\n%s", m["kind"], objs[i].GetName(), d)
		}
	}
	for _, k := range []string{"Namespace", "Deployment", "Service", "HorizontalPodAutoscaler", "Job"} {
		if !kinds[k] {
			t.Errorf("no %s in the YAML", k)
		}
	}
	// The HPA's spec is still there whole.
	if !strings.Contains(string(y), "averageUtilization: 60") || !strings.Contains(string(y), "maxReplicas: 3") {
		t.Errorf("HPA spec lost:\n%s", y)
	}
}

// TestNotesIstioTelemetryDefaults: with Istio, a tracing or metrics key
// left unset gets a note, as the Telemetry then records less than Istio's
// own defaults; a key set (even to the default's value) gets none.
func TestNotesIstioTelemetryDefaults(t *testing.T) {
	for _, tt := range []struct {
		name, extra             string
		tracingNote, metricNote bool
	}{
		{"no istio", "", false, false},
		{"istio, unset", "sidecar = \"istio\"\n", true, true},
		{"istio, tracing set", "sidecar = \"istio\"\ntracing = 0.0\n", false, true},
		{"istio, both set", "sidecar = \"istio\"\ntracing = 0.01\nmetrics = false\n", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(chainSplit, "placement = \"split\"\n", "placement = \"split\"\n"+tt.extra, 1) + withLoad
			s, topo := resolve(t, src)
			notes := strings.Join(Notes(s, topo), "\n")
			if got := strings.Contains(notes, "deploy.tracing is not set"); got != tt.tracingNote {
				t.Errorf("tracing note %v, want %v:\n%s", got, tt.tracingNote, notes)
			}
			if got := strings.Contains(notes, "deploy.metrics is not set"); got != tt.metricNote {
				t.Errorf("metrics note %v, want %v:\n%s", got, tt.metricNote, notes)
			}
		})
	}
}

// TestNotesKeysNotRendered: keys the cluster ignores get a note naming
// them, and only when the spec asks for what they do.
func TestNotesKeysNotRendered(t *testing.T) {
	for _, tt := range []struct {
		name, extra string
		note        string
		want        bool
	}{
		{"one local generator", "[load]\nrate = 10\ngenerators = 1\n", "load.generators", false},
		{"local generators", "[load]\nrate = 10\ngenerators = 4\n", "load.generators = 4 is the local deployer's and is not rendered: on a cluster deploy.kube.generators (1) load pods", true},
		{"balancer left out", "", "deploy.balancer", false},
		{"balancer", "balancer = \"least_outstanding\"\n", `deploy.balancer = "least_outstanding" is not rendered`, true},
		{"isolation left out", "", "experiment.isolation", false},
		{"isolation none", "[experiment]\nisolation = \"none\"\n", "experiment.isolation", false},
		{"isolation cpuset", "[experiment]\nisolation = \"cpuset\"\n", `experiment.isolation = "cpuset" divides this machine's CPUs`, true},
		{"telemetry left out", "tracing = 1.0\n", "deploy.telemetry_cpus", false},
		{"telemetry on the generator", "tracing = 1.0\ntelemetry_cpus = \"generator\"\n", `deploy.telemetry_cpus = "generator" places this machine's Jaeger and Prometheus`, true},
		{"telemetry on the generator, metrics", "metrics = true\ntelemetry_cpus = \"generator\"\n", `deploy.telemetry_cpus = "generator"`, true},
		{"telemetry on the generator, no backend", "telemetry_cpus = \"generator\"\n", "deploy.telemetry_cpus", false},
		{"faults", "[deploy.faults.kill]\ntarget = \"hop2\"\nstart = \"1s\"\n", "[deploy.faults] is not rendered, and a run on a cluster refuses it", true},
		{"hosts", "[deploy.hosts.vm1]\ngroups = [\"hop1\"]\ncpus = 1\nexclusive = true\n", "the hosts' cpus, memory and exclusive and the links are the netns deployer's emulation", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			notes := strings.Join(Notes(resolve(t, chainSplit+tt.extra)), "\n")
			if got := strings.Contains(notes, tt.note); got != tt.want {
				t.Errorf("note %q: %v, want %v:\n%s", tt.note, got, tt.want, notes)
			}
		})
	}
}
