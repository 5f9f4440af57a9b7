// Package hopfault turns a fault of [deploy.faults] that acts on a hop
// (link_cut, reset, latency_spike) into toxiproxy toxics, and adds them to
// and removes them from the toxiproxy proxies a deployer puts on the hop:
// the local deployer's fault proxies and the netns deployer's link
// proxies, so that a fault means the same on every deployer.
package hopfault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// resetType is the toxic of deploy.faults.reset. toxiproxy's reset_peer
// decides once per connection, and gRPC and pooled HTTP carry every call
// over one or two long-lived connections, so a fraction of connections
// would reset all calls or none; this toxic resets the connection at each
// chunk the caller sends with the given probability, so about that share
// of calls meets a reset (and takes the calls in flight with it), as a
// peer that crashes now and then does.
const resetType = "svclab_reset"

func init() { toxics.Register(resetType, new(resetToxic)) }

type resetToxic struct {
	Probability float64 `json:"probability"`
}

// Pipe is the toxic's loop (toxics.Toxic): pass each chunk on, or close
// the connection with an RST (toxiproxy closes a stub's connection with
// SO_LINGER 0).
func (t *resetToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil || rand.Float64() < t.Probability {
				stub.Close()
				return
			}
			stub.Output <- c
		}
	}
}

// toxicsOf are the toxics (toxiproxy's JSON) that make f.
func toxicsOf(f runtime.Fault) ([]string, error) {
	name := "fault_" + f.Kind
	switch f.Kind {
	case spec.FaultLinkCut:
		// A partition: nothing passes either way and nothing is
		// refused; what is sent is lost, and when the cut ends
		// toxiproxy's timeout toxic (with no timeout) closes the
		// connections it held, so callers reconnect, as after a
		// partition long enough for TCP to give up.
		var out []string
		for _, dir := range []string{"upstream", "downstream"} {
			out = append(out, fmt.Sprintf(`{"name":"%s_%s","type":"timeout","stream":%q,"toxicity":1,"attributes":{"timeout":0}}`, name, dir, dir))
		}
		return out, nil
	case spec.FaultReset:
		return []string{fmt.Sprintf(`{"name":%q,"type":%q,"stream":"upstream","toxicity":1,"attributes":{"probability":%g}}`, name, resetType, f.Fraction)}, nil
	case spec.FaultLatencySpike:
		// toxicity picks the connections delayed: toxiproxy decides per
		// connection whether a toxic acts on it.
		return []string{fmt.Sprintf(`{"name":%q,"type":"latency","stream":"downstream","toxicity":%g,"attributes":{"latency":%d,"jitter":0}}`, name, f.Fraction, f.Delay.Milliseconds())}, nil
	}
	return nil, fmt.Errorf("deploy.faults: %q does not act on a hop", f.Kind)
}

// Start adds f's toxics to every proxy, and returns what removes them.
// On error nothing stays added.
func Start(f runtime.Fault, proxies []*toxiproxy.Proxy) (stop func() error, err error) {
	bodies, err := toxicsOf(f)
	if err != nil {
		return nil, err
	}
	type added struct {
		p    *toxiproxy.Proxy
		name string
	}
	var done []added
	stop = func() error {
		var errs []error
		for _, a := range done {
			if err := a.p.Toxics.RemoveToxic(context.Background(), a.name); err != nil {
				errs = append(errs, fmt.Errorf("remove %s from the hop to %s: %w", a.name, a.p.Upstream, err))
			}
		}
		return errors.Join(errs...)
	}
	for _, p := range proxies {
		for _, body := range bodies {
			t, err := p.Toxics.AddToxicJson(strings.NewReader(body))
			if err != nil {
				return nil, errors.Join(fmt.Errorf("deploy.faults.%s on the hop to %s: %w", f.Kind, p.Upstream, err), stop())
			}
			done = append(done, added{p, t.Name})
		}
	}
	return stop, nil
}

// server carries the proxies' (disabled) metrics and silent logger.
var server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())

// Listen starts a silent proxy on a free loopback port that forwards
// every connection to upstream, for Start to fault: what a deployer puts
// on a hop that has no proxy of its own.
func Listen(upstream string) (*toxiproxy.Proxy, error) {
	p := toxiproxy.NewProxy(server, "fault→"+upstream, "127.0.0.1:0", upstream)
	nop := zerolog.Nop()
	p.Logger = &nop
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("deploy.faults: proxy for %s: %w", upstream, err)
	}
	return p, nil
}
