package spec

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFaultKeys(t *testing.T) {
	tests := []struct {
		name, src string
		err       string
		check     func(t *testing.T, f Faults)
	}{
		{name: "none", src: "[deploy]\n", check: func(t *testing.T, f Faults) {
			if f.Any() {
				t.Errorf("faults %+v, want none", f)
			}
		}},
		{name: "all kinds", src: `[deploy.faults.link_cut]
target = "hop2"
start = "5s"
duration = "3s"
[deploy.faults.reset]
target = "hop3"
fraction = 0.25
[deploy.faults.latency_spike]
target = "hop2"
delay = "50ms"
duration = "1s"
every = "4s"
[deploy.faults.kill]
target = "hop4"
start = "2s"
replica = 1
`, check: func(t *testing.T, f Faults) {
			if c := f.LinkCut; c == nil || c.Target != "hop2" || c.Start.D() != 5*time.Second || c.Duration.D() != 3*time.Second {
				t.Errorf("link_cut %+v", c)
			}
			if r := f.Reset; r == nil || r.Fraction != 0.25 || r.Duration != 0 {
				t.Errorf("reset %+v", r)
			}
			if l := f.LatencySpike; l == nil || l.Every.D() != 4*time.Second || l.Delay.D() != 50*time.Millisecond {
				t.Errorf("latency_spike %+v", l)
			}
			if k := f.Kill; k == nil || k.Replica != 1 || k.Start.D() != 2*time.Second {
				t.Errorf("kill %+v", k)
			}
		}},
		{name: "negative start", src: "[deploy.faults.kill]\ntarget = \"a\"\nstart = \"-1s\"\n", err: "x.toml:3: deploy.faults.kill.start: must not be negative"},
		{name: "unknown kind", src: "[deploy.faults.partition]\ntarget = \"a\"\n", err: "deploy.faults.partition: unknown key"},
		{name: "unknown key", src: "[deploy.faults.kill]\ntarget = \"a\"\nsignal = 9\n", err: "x.toml:3: deploy.faults.kill.signal: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.toml", []byte(tt.src))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s.Deploy.Faults)
		})
	}
}

func TestResilienceKeys(t *testing.T) {
	s, err := Parse("x.toml", []byte("[deploy.resilience]\nretries = 2\n[deploy.resilience.breaker]\nfailures = 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Deploy.Resilience
	want := Resilience{Retries: 2, RetryBudget: DefaultRetryBudget, Backoff: Duration(DefaultBackoff), MaxBackoff: Duration(10 * DefaultBackoff), RetryOn: DefaultRetryOn,
		Breaker: Breaker{Failures: 5, Window: Duration(DefaultBreakerWindow), MinCalls: DefaultBreakerMinCalls, Open: Duration(DefaultBreakerOpen), Probes: DefaultBreakerProbes}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("resilience %+v, want %+v", r, want)
	}
	if !r.On() || !r.Breaker.On() {
		t.Error("On: false, want true")
	}
	if s, _ := Parse("x.toml", []byte("[deploy]\n")); s.Deploy.Resilience.On() {
		t.Error("no [deploy.resilience]: On is true")
	}
	for _, tt := range []struct{ src, err string }{
		{"[deploy.resilience]\nretries = -1\n", "x.toml:2: deploy.resilience.retries: must be from 0 to 10"},
		{"[deploy.resilience]\nretry_budget = 1.5\n", "x.toml:2: deploy.resilience.retry_budget"},
		{"[deploy.resilience]\nbackoff = \"100ms\"\nmax_backoff = \"10ms\"\n", "x.toml:3: deploy.resilience.max_backoff: must be at least backoff (100ms)"},
		{"[deploy.resilience]\nretry_on = \"unavailable,not_found\"\n", "x.toml:2: deploy.resilience.retry_on: must list gRPC codes"},
		{"[deploy.resilience.breaker]\nratio = 2.0\n", "x.toml:2: deploy.resilience.breaker.ratio"},
		{"[deploy.resilience.breaker]\nfailures = 3\nopen = \"0s\"\n", "x.toml:3: deploy.resilience.breaker.open: must be positive"},
		{"[deploy.resilience.breaker]\nprobes = 0\n", "x.toml:2: deploy.resilience.breaker.probes: must be at least 1"},
	} {
		if _, err := Parse("x.toml", []byte(tt.src)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.err)
		}
	}
}

// TestFaultFactorLevels checks that fault and resilience scalars are
// factors, and that a bad level is located at the factor's line.
func TestFaultFactorLevels(t *testing.T) {
	src := "[deploy.faults.reset]\ntarget = \"a\"\nfraction = 0.1\n[experiment.factors]\n\"deploy.faults.reset.fraction\" = [0.1, 0.5]\n\"deploy.resilience.retries\" = [0, 3]\n"
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.With(map[string]any{"deploy.faults.reset.fraction": 0.5, "deploy.resilience.retries": int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Deploy.Faults.Reset.Fraction != 0.5 || r.Deploy.Resilience.Retries != 3 {
		t.Errorf("levels not applied: %+v %+v", r.Deploy.Faults.Reset, r.Deploy.Resilience)
	}
	if _, err := s.With(map[string]any{"deploy.faults.reset.fraction": "half"}); err == nil || !strings.Contains(err.Error(), "x.toml:5: deploy.faults.reset.fraction: must be a number") {
		t.Errorf("level \"half\": %v", err)
	}
}
