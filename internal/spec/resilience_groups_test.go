package spec

import (
	"strings"
	"testing"
	"time"
)

// TestResilienceGroups checks that a group's table inherits what it does
// not write from [deploy.resilience] (after that has its defaults), and
// overrides what it writes, breaker keys one by one.
func TestResilienceGroups(t *testing.T) {
	src := `[deploy.resilience]
timeout = "1s"
retries = 2
[deploy.resilience.breaker]
failures = 5
[deploy.resilience.groups.payment]
retries = 0
backoff = "10ms"
[deploy.resilience.groups.payment.breaker]
open = "2s"
[deploy.resilience.groups.cart]
timeout = "200ms"
`
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Deploy.Resilience
	if got := r.GroupNames(); strings.Join(got, ",") != "cart,payment" {
		t.Fatalf("groups %v", got)
	}
	p, c := r.Groups["payment"], r.Groups["cart"]
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"payment timeout (inherited)", p.Timeout.D(), time.Second},
		{"payment retries", p.Retries, 0},
		{"payment backoff", p.Backoff.D(), 10 * time.Millisecond},
		{"payment max_backoff (ten times its own backoff)", p.MaxBackoff.D(), 100 * time.Millisecond},
		{"payment retry_budget (inherited default)", p.RetryBudget, DefaultRetryBudget},
		{"payment retry_on (inherited default)", p.RetryOn, DefaultRetryOn},
		{"payment breaker failures (inherited)", p.Breaker.Failures, 5},
		{"payment breaker open", p.Breaker.Open.D(), 2 * time.Second},
		{"payment breaker window (inherited default)", p.Breaker.Window.D(), DefaultBreakerWindow},
		{"cart timeout", c.Timeout.D(), 200 * time.Millisecond},
		{"cart retries (inherited)", c.Retries, 2},
		{"cart max_backoff (inherited)", c.MaxBackoff.D(), 10 * DefaultBackoff},
		{"cart breaker probes (inherited default)", c.Breaker.Probes, DefaultBreakerProbes},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	// A group's policy alone turns the middleware on.
	only, err := Parse("x.toml", []byte("[deploy.resilience.groups.cart]\nretries = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !only.Deploy.Resilience.On() || only.Deploy.Resilience.Retries != 0 {
		t.Errorf("a group's retries only: On %v, hop-wide retries %d", only.Deploy.Resilience.On(), only.Deploy.Resilience.Retries)
	}
}

func TestResilienceGroupErrors(t *testing.T) {
	for _, tt := range []struct{ src, err string }{
		{"[deploy.resilience.groups.cart]\nretries = 11\n", "x.toml:2: deploy.resilience.groups.cart.retries: must be from 0 to 10"},
		{"[deploy.resilience]\nbackoff = \"100ms\"\n[deploy.resilience.groups.cart]\nmax_backoff = \"10ms\"\n", "x.toml:4: deploy.resilience.groups.cart.max_backoff: must be at least backoff (100ms)"},
		{"[deploy.resilience.groups.cart.breaker]\nratio = 1.5\n", "x.toml:2: deploy.resilience.groups.cart.breaker.ratio"},
		{"[deploy.resilience.groups.cart]\nretry_on = \"not_found\"\n", "x.toml:2: deploy.resilience.groups.cart.retry_on"},
		{"[deploy.resilience.groups.cart]\nretrys = 1\n", "deploy.resilience.groups.cart.retrys"},
		{"[deploy.resilience.groups.cart.groups.x]\nretries = 1\n", "deploy.resilience.groups.cart.groups"},
	} {
		if _, err := Parse("x.toml", []byte(tt.src)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.err)
		}
	}
}

// TestResilienceGroupFactor makes a group's key a factor: each level
// reaches that group's policy alone, and a bad level is located at the
// factor's line.
func TestResilienceGroupFactor(t *testing.T) {
	src := "[deploy.resilience]\nretries = 1\n[deploy.resilience.groups.cart]\ntimeout = \"1s\"\n[experiment.factors]\n\"deploy.resilience.groups.cart.retries\" = [0, 3]\n"
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.With(map[string]any{"deploy.resilience.groups.cart.retries": int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Deploy.Resilience.Groups["cart"]; got.Retries != 3 || got.Timeout.D() != time.Second || r.Deploy.Resilience.Retries != 1 {
		t.Errorf("level 3: cart %+v, hop-wide retries %d", got, r.Deploy.Resilience.Retries)
	}
	if _, err := s.With(map[string]any{"deploy.resilience.groups.cart.retries": int64(12)}); err == nil || !strings.Contains(err.Error(), "x.toml:6: deploy.resilience.groups.cart.retries") {
		t.Errorf("level 12: %v", err)
	}
}
