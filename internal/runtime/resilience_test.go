package runtime

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// TestResilienceThroughHostConfig checks that deploy.resilience reaches a
// host's middleware as written: spec → HostConfig → options.
func TestResilienceThroughHostConfig(t *testing.T) {
	s, err := spec.Parse("x.toml", []byte(`[deploy.resilience]
timeout = "150ms"
retries = 3
retry_budget = 0.5
backoff = "5ms"
retry_on = "unavailable, deadline_exceeded"
[deploy.resilience.breaker]
ratio = 0.5
min_calls = 7
`))
	if err != nil {
		t.Fatal(err)
	}
	hc, err := DecodeHostConfig(mustEncode(t, ResilienceProto(s.Deploy.Resilience)))
	if err != nil {
		t.Fatal(err)
	}
	o, err := resilienceOptions(hc.GetMesh().GetResilience())
	if err != nil {
		t.Fatal(err)
	}
	if o.Timeout != 150*time.Millisecond || o.Retries != 3 || o.RetryBudget != 0.5 || o.Backoff != 5*time.Millisecond || o.MaxBackoff != 50*time.Millisecond {
		t.Errorf("options %+v", o)
	}
	if !slices.Equal(o.RetryOn, []codes.Code{codes.Unavailable, codes.DeadlineExceeded}) {
		t.Errorf("retry_on %v", o.RetryOn)
	}
	if b := o.Breaker; b == nil || b.Ratio != 0.5 || b.MinCalls != 7 || b.Failures != 0 || b.Open != spec.DefaultBreakerOpen || b.Probes != 1 {
		t.Errorf("breaker %+v", b)
	}
	if ResilienceProto(spec.Resilience{RetryOn: "unavailable", RetryBudget: 0.2}) != nil {
		t.Error("nothing turned on, yet a HostConfig field")
	}
}

func mustEncode(t *testing.T, r *hostv1.Resilience) []byte {
	t.Helper()
	b, err := EncodeHostConfig(&hostv1.HostConfig{Group: "g", Mesh: &hostv1.Mesh{Resilience: r}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
