package runtime

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/svclab/svclab/internal/runtime/middleware/resilience"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// ResilienceProto is deploy.resilience as the host protocol carries it;
// nil when the spec turns nothing of it on.
func ResilienceProto(r spec.Resilience) *hostv1.Resilience {
	if !r.On() {
		return nil
	}
	out := &hostv1.Resilience{
		Retries:     int32(r.Retries),
		RetryBudget: r.RetryBudget,
		Backoff:     durationpb.New(r.Backoff.D()),
		MaxBackoff:  durationpb.New(r.MaxBackoff.D()),
	}
	if r.Timeout > 0 {
		out.Timeout = durationpb.New(r.Timeout.D())
	}
	for _, c := range strings.Split(r.RetryOn, ",") {
		out.RetryOn = append(out.RetryOn, strings.TrimSpace(c))
	}
	if b := r.Breaker; b.On() {
		out.Breaker = &hostv1.Breaker{
			Failures: int32(b.Failures), Ratio: b.Ratio, Window: durationpb.New(b.Window.D()),
			MinCalls: int32(b.MinCalls), Open: durationpb.New(b.Open.D()), Probes: int32(b.Probes),
		}
	}
	return out
}

// resilienceOptions reads HostConfig.mesh.resilience.
func resilienceOptions(r *hostv1.Resilience) (resilience.Options, error) {
	o := resilience.Options{
		Timeout:             r.GetTimeout().AsDuration(),
		Retries:             int(r.GetRetries()),
		RetryBudget:         r.GetRetryBudget(),
		MinRetriesPerSecond: resilience.DefaultMinRetriesPerSecond,
		Backoff:             r.GetBackoff().AsDuration(),
		MaxBackoff:          r.GetMaxBackoff().AsDuration(),
	}
	for _, name := range r.GetRetryOn() {
		var c codes.Code
		// codes.Code reads the upper-case names grpc-go writes in JSON.
		if err := c.UnmarshalJSON([]byte(`"` + strings.ToUpper(name) + `"`)); err != nil {
			return o, fmt.Errorf("mesh.resilience.retry_on: %q: %w", name, err)
		}
		o.RetryOn = append(o.RetryOn, c)
	}
	if b := r.GetBreaker(); b != nil {
		o.Breaker = &resilience.BreakerOptions{
			Failures: int(b.GetFailures()), Ratio: b.GetRatio(), Window: b.GetWindow().AsDuration(),
			MinCalls: int(b.GetMinCalls()), Open: b.GetOpen().AsDuration(), Probes: int(b.GetProbes()),
		}
	}
	for peer, pr := range r.GetPeers() {
		po, err := resilienceOptions(pr)
		if err != nil {
			return o, fmt.Errorf("mesh.resilience.peers[%s]: %w", peer, err)
		}
		if o.Peers == nil {
			o.Peers = map[string]resilience.Options{}
		}
		o.Peers[peer] = po
	}
	return o, nil
}
