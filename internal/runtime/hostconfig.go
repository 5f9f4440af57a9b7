package runtime

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// Environment variables and markers of the host protocol (docs/DEPLOY.md,
// "Host protocol"; the messages are in proto/host/v1/host.proto).
const (
	// HostConfigEnv carries a hostv1.HostConfig, in the protobuf JSON
	// mapping, to a host process.
	HostConfigEnv = "SVCLAB_HOST_CONFIG"
	// DeploymentEnv carries the deployment's id; it marks every process
	// of a deployment, so leftovers can be found in /proc.
	DeploymentEnv = "SVCLAB_DEPLOYMENT"
	// FailComponentEnv is a test knob: a host whose group holds the named
	// component fails while building it, as a crashing service would.
	FailComponentEnv = "SVCLAB_FAIL_COMPONENT"
	// GatewayTransport serves the HTTP/JSON gateway of the entry group.
	GatewayTransport = "http"
	// ReadyMarker starts the line a host writes to stderr once it serves.
	ReadyMarker = "svclab host ready:"
)

// Endpoint is where a component (or the gateway) is served: the Go value of
// a hostv1.Endpoint, comparable and printable.
type Endpoint struct {
	Transport string
	Network   string // "tcp" or "unix"
	Addr      string // host:port, or a socket path
}

func (e Endpoint) String() string { return e.Transport + "+" + e.Network + "://" + e.Addr }

// Proto is e as the host protocol carries it.
func (e Endpoint) Proto() *hostv1.Endpoint {
	return &hostv1.Endpoint{Transport: e.Transport, Network: e.Network, Addr: e.Addr}
}

// EndpointOf is the endpoint a host protocol message names.
func EndpointOf(e *hostv1.Endpoint) Endpoint {
	return Endpoint{Transport: e.GetTransport(), Network: e.GetNetwork(), Addr: e.GetAddr()}
}

// EncodeHostConfig writes c in the protobuf JSON mapping, as HostConfigEnv
// and `svclab host --config` carry it.
func EncodeHostConfig(c *hostv1.HostConfig) ([]byte, error) {
	b, err := protojson.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode host config of group %s: %w", c.GetGroup(), err)
	}
	return b, nil
}

// DecodeHostConfig parses a HostConfig in the protobuf JSON mapping,
// rejecting unknown fields so that a host never silently ignores part of
// what its deployer meant.
func DecodeHostConfig(b []byte) (*hostv1.HostConfig, error) {
	c := new(hostv1.HostConfig)
	if err := protojson.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("decode host config: %w", err)
	}
	return c, nil
}

// HTTPLimitsProto is l as the host protocol carries it.
func HTTPLimitsProto(l transport.HTTPLimits) *hostv1.HttpLimits {
	d := func(t time.Duration) *durationpb.Duration {
		if t == 0 {
			return nil
		}
		return durationpb.New(t)
	}
	return &hostv1.HttpLimits{
		MaxBodyBytes:      l.MaxBodyBytes,
		MaxHeaderBytes:    int64(l.MaxHeaderBytes),
		ReadHeaderTimeout: d(l.ReadHeaderTimeout),
		ReadTimeout:       d(l.ReadTimeout),
		IdleTimeout:       d(l.IdleTimeout),
	}
}

// HTTPLimitsOf reads the limits a host was given; nil means none.
func HTTPLimitsOf(p *hostv1.HttpLimits) transport.HTTPLimits {
	return transport.HTTPLimits{
		MaxBodyBytes:      p.GetMaxBodyBytes(),
		MaxHeaderBytes:    int(p.GetMaxHeaderBytes()),
		ReadHeaderTimeout: p.GetReadHeaderTimeout().AsDuration(),
		ReadTimeout:       p.GetReadTimeout().AsDuration(),
		IdleTimeout:       p.GetIdleTimeout().AsDuration(),
	}
}

// HostConfig is the part of group g's HostConfig that every deployer
// gives alike: the app, its config, the group, the transport and its
// options. A deployer adds where the host listens (Listeners, Gateway,
// Control) and where its peers are (Peers), which only it knows.
func (p *Topology) HostConfig(g int, deployment string, cfgJSON json.RawMessage) *hostv1.HostConfig {
	grp := p.Groups[g]
	hc := &hostv1.HostConfig{
		Deployment: deployment,
		App:        p.App.Name,
		ConfigJson: string(cfgJSON),
		Transport:  p.Transport,
		Group:      grp.Name,
		Components: grp.Components,
		Entry:      p.Entry,
		TransportOptions: &hostv1.TransportOptions{
			HttpCodec:  p.HTTPCodec,
			HttpLimits: HTTPLimitsProto(p.HTTPLimits),
		},
	}
	// The default (round robin) stays unset, so that a host that
	// predates the field still reads the config.
	if p.Balancer != spec.BalancerRoundRobin {
		hc.TransportOptions.Balancer = p.Balancer
	}
	return hc
}

// Peers lists the components of other groups that group g calls, sorted:
// the keys of its HostConfig's peers.
func (p *Topology) Peers(g int) []string {
	var out []string
	for _, name := range p.Groups[g].Components {
		for _, dep := range p.components[name].Deps {
			if p.GroupOf(dep) != g && !slices.Contains(out, dep) {
				out = append(out, dep)
			}
		}
	}
	slices.Sort(out)
	return out
}
