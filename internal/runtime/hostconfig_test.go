package runtime_test

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// fullConfig sets every field of the host protocol, so a field the JSON
// mapping dropped would show.
func fullConfig() *hostv1.HostConfig {
	ep := func(tr, nw, addr string) *hostv1.Endpoint {
		return &hostv1.Endpoint{Transport: tr, Network: nw, Addr: addr}
	}
	return &hostv1.HostConfig{
		Deployment: "d1",
		App:        "select",
		// An int64 beyond a double's 53 bits, which a Struct would round.
		ConfigJson: `{"size":"small","seed":9007199254740993}`,
		Group:      "frontend",
		Components: []string{"frontend"},
		Entry:      "frontend",
		Transport:  "grpc",
		Listeners: map[string]*hostv1.Listener{
			"frontend": {Endpoint: ep("grpc", "unix", "/tmp/x/frontend.sock"), Fd: 3},
		},
		Gateway: &hostv1.Listener{Endpoint: ep("http", "tcp", "127.0.0.1:8080"), Fd: 4},
		Peers: map[string]*hostv1.EndpointSet{
			"selector": {Endpoints: []*hostv1.Endpoint{ep("grpc", "tcp", "127.0.0.1:9001"), ep("grpc", "tcp", "127.0.0.1:9002")}},
			"idle":     {},
		},
		Control: &hostv1.Listener{Endpoint: ep("grpc", "unix", "/tmp/x/control-0.sock"), Fd: 5},
	}
}

func TestHostConfigRoundTrip(t *testing.T) {
	want := fullConfig()
	b, err := runtime.EncodeHostConfig(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runtime.DecodeHostConfig(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("round trip changed the config:\n got %v\nwant %v", got, want)
	}
	// The app config arrives digit for digit.
	var conf struct{ Seed int64 }
	if err := json.Unmarshal([]byte(got.GetConfigJson()), &conf); err != nil || conf.Seed != 9007199254740993 {
		t.Errorf("seed %d (%v), want 9007199254740993", conf.Seed, err)
	}
}

// TestDecodeHostConfig checks what a host accepts as written by other
// languages' JSON printers, and what it refuses.
func TestDecodeHostConfig(t *testing.T) {
	tests := []struct {
		name, json string
		err        string // empty: accepted
		check      func(*hostv1.HostConfig) bool
	}{
		{
			name: "lowerCamelCase names (Go, Java and Python printers)",
			json: `{"app":"chain","configJson":"{}","listeners":{"hop1":{"endpoint":{"transport":"grpc","network":"tcp","addr":"127.0.0.1:0"}}}}`,
			check: func(c *hostv1.HostConfig) bool {
				return c.GetListeners()["hop1"].GetEndpoint().GetAddr() == "127.0.0.1:0"
			},
		},
		{
			name: "proto field names",
			json: `{"app":"chain","config_json":"{\"hops\":2}","peers":{"hop2":{"endpoints":[{"transport":"http","network":"unix","addr":"/s"}]}}}`,
			check: func(c *hostv1.HostConfig) bool {
				return c.GetConfigJson() == `{"hops":2}` && c.GetPeers()["hop2"].GetEndpoints()[0].GetTransport() == "http"
			},
		},
		{name: "unknown top-level field", json: `{"app":"chain","replicas":3}`, err: "replicas"},
		{name: "unknown nested field", json: `{"gateway":{"endpoint":{"addr":"x","tls":true}}}`, err: "tls"},
		{name: "the old single-endpoint peers", json: `{"peers":{"hop2":{"transport":"grpc","network":"tcp","addr":"x"}}}`, err: "transport"},
		{name: "config as an object", json: `{"configJson":{"hops":2}}`, err: "configJson"},
		{name: "not JSON", json: `app: chain`, err: "decode host config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := runtime.DecodeHostConfig([]byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("decoded %v", c)
			}
		})
	}
}

func TestEndpointProto(t *testing.T) {
	ep := runtime.Endpoint{Transport: "netrpc", Network: "unix", Addr: "/tmp/s.sock"}
	if got := runtime.EndpointOf(ep.Proto()); got != ep {
		t.Errorf("EndpointOf(Proto()) = %v, want %v", got, ep)
	}
	if got := runtime.EndpointOf(nil); got != (runtime.Endpoint{}) {
		t.Errorf("EndpointOf(nil) = %v, want the zero endpoint", got)
	}
}
