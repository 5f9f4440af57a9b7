package sidecar

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

func layoutFor(t *testing.T, sidecar, mode string) (*runtime.Topology, *Layout, func() (int, error), func(string) (string, error)) {
	t.Helper()
	s, err := spec.Parse("x.toml", []byte(fmt.Sprintf("[app]\nname = \"chain\"\nhops = 3\n[deploy]\nplacement = \"split\"\nsidecar = %q\nproxy_mode = %q\n", sidecar, mode)))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	next := 50000
	port := func() (int, error) { next++; return next, nil }
	root := t.TempDir()
	dir := func(n string) (string, error) {
		d := filepath.Join(root, n)
		return d, os.Mkdir(d, 0o700)
	}
	app := func(g int, c string) []string { return []string{fmt.Sprintf("10.0.%d.0:1", g)} }
	lay, err := NewLayout(topo, app, port, dir)
	if err != nil {
		t.Fatal(err)
	}
	return topo, lay, port, dir
}

// edsPorts reads the ports of the endpoint file Envoy watches for l.
func edsPorts(t *testing.T, c Config, l Listener) []int {
	t.Helper()
	b, err := os.ReadFile(envoyEDSPath(c, l))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Resources []struct {
			Type      string `json:"@type"`
			Cluster   string `json:"cluster_name"`
			Endpoints []struct {
				LB []struct {
					Endpoint struct {
						Address struct {
							Socket struct {
								Port int `json:"port_value"`
							} `json:"socket_address"`
						} `json:"address"`
					} `json:"endpoint"`
				} `json:"lb_endpoints"`
			} `json:"endpoints"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].Cluster != "to_"+l.Name || !strings.HasSuffix(resp.Resources[0].Type, "ClusterLoadAssignment") {
		t.Fatalf("endpoint file of %s: %s", l.Name, b)
	}
	var out []int
	for _, e := range resp.Resources[0].Endpoints {
		for _, lb := range e.LB {
			out = append(out, lb.Endpoint.Address.Socket.Port)
		}
	}
	return out
}

// TestAddReplicaSetUpstreams adds a second replica of hop2 to an Envoy
// layout: it gets its own sidecar whose inbound listener leads to its app
// and whose outbound one to hop3's proxy; SetUpstreams then points hop1's
// way to hop2 at both replicas' proxies and rewrites the file Envoy
// watches, with no temp file left beside it; RemoveReplica takes the
// sidecar out again.
func TestAddReplicaSetUpstreams(t *testing.T) {
	topo, lay, port, dir := layoutFor(t, "envoy", "sidecar")
	if err := lay.Scalable(); err != nil {
		t.Fatal(err)
	}
	for _, px := range lay.Proxies {
		if _, err := Write(lay.Kind, px.Config); err != nil {
			t.Fatal(err)
		}
	}
	hop3 := lay.InboundOf(2, 0, "hop3")
	px, err := lay.AddReplica(topo, 1, 1, func(c string) string { return "10.0.1.1:" + c }, func(dep string) []string { return []string{lay.InboundOf(2, 0, dep)} }, port, dir)
	if err != nil {
		t.Fatal(err)
	}
	if px.Config.Name != "hop2#1.envoy" { // hop2 started as one replica, "hop2.envoy"
		t.Errorf("sidecar named %q, want hop2#1.envoy", px.Config.Name)
	}
	in := lay.InboundOf(1, 1, "hop2")
	if in == "" || in == lay.InboundOf(1, 0, "hop2") {
		t.Fatalf("replica 1's inbound listener %q", in)
	}
	var out Listener
	for _, l := range px.Config.Listeners {
		if l.Inbound && !slices.Equal(l.Upstreams, []string{"10.0.1.1:hop2"}) {
			t.Errorf("inbound listener leads to %v", l.Upstreams)
		}
		if !l.Inbound {
			out = l
		}
	}
	if out.Component != "hop3" || !slices.Equal(out.Upstreams, []string{hop3}) || lay.Peers[1][1]["hop3"] != loopback(out.Port) {
		t.Errorf("outbound listener %+v, peers %v; want to hop3 at %s", out, lay.Peers[1][1], hop3)
	}
	if _, err := lay.AddReplica(topo, 1, 1, nil, nil, port, dir); err == nil {
		t.Error("a second sidecar for the same replica was accepted")
	}
	both := []string{lay.InboundOf(1, 0, "hop2"), in}
	if err := lay.SetUpstreams("hop2", both); err != nil {
		t.Fatal(err)
	}
	hop1 := lay.Proxies[0].Config
	var toHop2 Listener
	for _, l := range hop1.Listeners {
		if !l.Inbound && l.Component == "hop2" {
			toHop2 = l
		}
	}
	if !slices.Equal(toHop2.Upstreams, both) {
		t.Errorf("hop1's way to hop2 leads to %v, want %v", toHop2.Upstreams, both)
	}
	var want []int
	for _, a := range both {
		var p int
		_, _ = fmt.Sscanf(a[strings.LastIndexByte(a, ':')+1:], "%d", &p)
		want = append(want, p)
	}
	if got := edsPorts(t, hop1, toHop2); !slices.Equal(got, want) {
		t.Errorf("hop1's endpoint file has ports %v, want %v", got, want)
	}
	ents, _ := os.ReadDir(filepath.Join(hop1.Dir, envoyEDSDir))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp") {
			t.Errorf("temp file %s left in the watched directory", e.Name())
		}
	}
	if _, ok := lay.RemoveReplica(1, 1); !ok {
		t.Fatal("RemoveReplica found no sidecar")
	}
	if lay.InboundOf(1, 1, "hop2") != "" || lay.Peers[1][1] != nil {
		t.Error("the removed replica's sidecar is still laid out")
	}
	if err := lay.SetUpstreams("hop2", both[:1]); err != nil {
		t.Fatal(err)
	}
	if got := edsPorts(t, hop1, toHop2); !slices.Equal(got, want[:1]) {
		t.Errorf("after removal hop1's endpoint file has ports %v, want %v", got, want[:1])
	}
}

// TestStaticKinds: a node proxy has a listener per replica it started
// with: none can scale.
func TestStaticKinds(t *testing.T) {
	for _, k := range []string{"envoy", "nginx", "haproxy"} {
		t.Run(k, func(t *testing.T) {
			topo, lay, port, dir := layoutFor(t, k, "node")
			if err := lay.Scalable(); err == nil || !strings.Contains(err.Error(), `needs deploy.proxy_mode = "sidecar"`) {
				t.Errorf("Scalable: %v, want it refused", err)
			}
			if _, err := lay.AddReplica(topo, 1, 1, nil, nil, port, dir); err == nil {
				t.Error("AddReplica succeeded")
			}
		})
	}
	for _, k := range []string{"envoy", "nginx", "haproxy"} {
		_, lay, _, _ := layoutFor(t, k, "sidecar")
		if err := lay.Scalable(); err != nil {
			t.Errorf("%s sidecars: Scalable: %v", k, err)
		}
	}
}
