package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMeshKeys(t *testing.T) {
	tests := []struct {
		src     string
		mtls    bool
		tracing float64
		metrics bool
		// telemetry is deploy.telemetry_cpus; empty means the default.
		telemetry string
		err       string
	}{
		{src: "[deploy]\n"},
		{src: "[deploy]\nmtls = true\ntracing = 0.25\nmetrics = true\n", mtls: true, tracing: 0.25, metrics: true},
		{src: "[deploy]\ntracing = 1\n", tracing: 1},
		{src: "[deploy]\ntracing = 0\n"},
		{src: "[deploy]\n\ntracing = 1.5\n", err: "x.toml:3: deploy.tracing: must be a sampling ratio from 0.0 (off) to 1.0 (every request), got 1.5"},
		{src: "[deploy]\ntracing = -0.1\n", err: "x.toml:2: deploy.tracing: must be a sampling ratio"},
		{src: "[deploy]\ntracing = nan\n", err: "x.toml:2: deploy.tracing: must be"},
		{src: "[deploy]\nmtls = \"yes\"\n", err: "x.toml:2: deploy.mtls"},
		{src: "[deploy]\nmetrics = 1\n", err: "x.toml:2: deploy.metrics"},
		{src: "[deploy]\ntelemetry_cpus = \"generator\"\n", telemetry: TelemetryCPUsGenerator},
		{src: "[deploy]\ntelemetry_cpus = \"system\"\n[experiment]\nisolation = \"none\"\n"},
		{src: "[deploy]\ntelemetry_cpus = \"loadgen\"\n", err: `x.toml:2: deploy.telemetry_cpus: must be "system" (the system under test's CPUs) or "generator" (the load generator's), got "loadgen"`},
		{src: "[deploy]\ntelemetry_cpus = \"\"\n", err: `x.toml:2: deploy.telemetry_cpus: must be "system"`},
		{src: "[experiment]\nisolation = \"none\"\n[deploy]\ntracing = 1.0\ntelemetry_cpus = \"generator\"\n", err: `x.toml:5: deploy.telemetry_cpus: "generator" needs the CPUs split: experiment.isolation is "none" (line 2)`},
	}
	for _, tt := range tests {
		s, err := Parse("x.toml", []byte(tt.src))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		if d := s.Deploy; d.MTLS != tt.mtls || d.Tracing != tt.tracing || d.Metrics != tt.metrics {
			t.Errorf("%q: mtls %v tracing %v metrics %v", tt.src, d.MTLS, d.Tracing, d.Metrics)
		}
		want := tt.telemetry
		if want == "" {
			want = TelemetryCPUsSystem
		}
		if got := s.Deploy.TelemetryCPUs; got != want {
			t.Errorf("%q: telemetry_cpus %q, want %q", tt.src, got, want)
		}
	}
}

// TestMeshFactorLevels checks that a level outside [0, 1] is refused with
// the factor's line, before any run.
func TestMeshFactorLevels(t *testing.T) {
	src := "[experiment.factors]\n\"deploy.tracing\" = [0.0, 2.0]\n\"deploy.mtls\" = [false, true]\n"
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.With(map[string]any{"deploy.tracing": 1.0, "deploy.mtls": true}); err != nil {
		t.Errorf("a good level: %v", err)
	}
	_, err = s.With(map[string]any{"deploy.tracing": 2.0, "deploy.mtls": true})
	if err == nil || !strings.Contains(err.Error(), "x.toml:2: deploy.tracing") {
		t.Errorf("level 2.0: %v", err)
	}
}

// TestTelemetryCPUsFactor checks that deploy.telemetry_cpus is a factor,
// and that a level the isolation cannot give is refused at the factor's
// line before any run.
func TestTelemetryCPUsFactor(t *testing.T) {
	src := "[experiment]\nisolation = \"none\"\n[experiment.factors]\n\"deploy.telemetry_cpus\" = [\"system\", \"generator\"]\n"
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.With(map[string]any{"deploy.telemetry_cpus": "system"}); err != nil || r.Deploy.TelemetryCPUs != TelemetryCPUsSystem {
		t.Errorf("level system: %v", err)
	}
	_, err = s.With(map[string]any{"deploy.telemetry_cpus": "generator"})
	if err == nil || !strings.Contains(err.Error(), "x.toml:4: deploy.telemetry_cpus") {
		t.Errorf("level generator without isolation: %v", err)
	}
}

// TestTelemetryCPUsIsolationBySet: when --set turns the isolation off under
// a spec that asks for the generator's CPUs, the error at the telemetry key
// names the flag that made the conflict.
func TestTelemetryCPUsIsolationBySet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.toml")
	if err := os.WriteFile(path, []byte("[app]\nname = \"chain\"\n[deploy]\ntelemetry_cpus = \"generator\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, "experiment.isolation=none")
	want := path + `:4: deploy.telemetry_cpus: "generator" needs the CPUs split: experiment.isolation is "none" (by --set experiment.isolation=none)`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %s…", err, want)
	}
	if _, err := Load(path, "experiment.isolation=cpuset"); err != nil {
		t.Errorf("with isolation cpuset: %v", err)
	}
}

// TestInert: keys that change nothing in a spec are named, with why; the
// same keys where they act are not.
func TestInert(t *testing.T) {
	for _, tc := range []struct {
		deploy string
		want   []string
	}{
		{"", nil},
		{"proxy_mode = \"node\"\n", []string{`deploy.proxy_mode = "node" does nothing without deploy.sidecar`}},
		{"proxy_mode = \"node\"\nsidecar = \"none\"\n", []string{`deploy.proxy_mode = "node" does nothing`}},
		{"proxy_mode = \"node\"\nsidecar = \"envoy\"\n", nil},
		{"telemetry_cpus = \"generator\"\n", []string{`deploy.telemetry_cpus = "generator" places nothing`}},
		{"telemetry_cpus = \"generator\"\ntracing = 0.1\n", nil},
		{"telemetry_cpus = \"generator\"\nmetrics = true\n", nil},
		{"telemetry_cpus = \"generator\"\nproxy_mode = \"node\"\n", []string{"deploy.proxy_mode", "deploy.telemetry_cpus"}},
		// load.requests may end the measurement before a fault's start,
		// which no plan can know; a fault from the start always acts.
		{"[deploy.faults.kill]\ntarget = \"hop2\"\nstart = \"5s\"\n[load]\nrequests = 100\n", []string{"deploy.faults.kill.start may not act: load.requests can end the measurement before it starts"}},
		{"[deploy.faults.kill]\ntarget = \"hop2\"\n[load]\nrequests = 100\n", nil},
		{"[deploy.faults.kill]\ntarget = \"hop2\"\nstart = \"5s\"\n", nil},
	} {
		s, err := Parse("x.toml", []byte("[app]\nname = \"chain\"\n[deploy]\n"+tc.deploy))
		if err != nil {
			t.Fatal(err)
		}
		got := s.Inert()
		if len(got) != len(tc.want) {
			t.Errorf("%q: %q, want %d notes", tc.deploy, got, len(tc.want))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tc.want[i]) {
				t.Errorf("%q: note %d %q, want it to begin %q", tc.deploy, i, got[i], tc.want[i])
			}
		}
	}
}
