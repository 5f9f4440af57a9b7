package spec

import (
	"strings"
	"testing"
)

func TestMeshKeys(t *testing.T) {
	tests := []struct {
		src     string
		mtls    bool
		tracing float64
		metrics bool
		err     string
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
