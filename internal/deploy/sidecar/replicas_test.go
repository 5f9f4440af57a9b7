package sidecar

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// TestLayoutReplicas lays out a three-hop chain whose hop2 has two replicas:
// in sidecar mode each replica gets its own proxy, and hop1's outbound
// listener balances over both of hop2's proxies' inbound listeners, while
// each hop2 replica calls hop3 through its own proxy; in node mode the one
// proxy has an inbound listener per replica and one outbound listener per
// caller group that balances over them.
func TestLayoutReplicas(t *testing.T) {
	for _, mode := range []string{"sidecar", "node"} {
		t.Run(mode, func(t *testing.T) {
			s, err := spec.Parse("x.toml", []byte(fmt.Sprintf("[app]\nname = \"chain\"\nhops = 3\n[deploy]\nplacement = \"split\"\nsidecar = \"envoy\"\nproxy_mode = %q\n[deploy.replicas]\nhop2 = 2\n", mode)))
			if err != nil {
				t.Fatal(err)
			}
			topo, err := runtime.Resolve(s)
			if err != nil {
				t.Fatal(err)
			}
			next := 50000
			port := func() (int, error) { next++; return next, nil }
			app := func(g int, c string) []string {
				var out []string
				for r := range topo.Groups[g].Replicas {
					out = append(out, fmt.Sprintf("10.0.%d.%d:%s", g, r, c))
				}
				return out
			}
			root := t.TempDir()
			lay, err := NewLayout(topo, app, port, func(n string) (string, error) {
				d := filepath.Join(root, n)
				return d, os.Mkdir(d, 0o700)
			})
			if err != nil {
				t.Fatal(err)
			}
			hop2 := lay.Inbound["hop2"]
			if len(hop2) != 2 || hop2[0] == hop2[1] {
				t.Fatalf("hop2's inbound listeners %v, want one per replica", hop2)
			}
			var names []string
			byAddr := map[string]Listener{}
			for _, px := range lay.Proxies {
				names = append(names, px.Config.Name)
				for _, l := range px.Config.Listeners {
					byAddr[loopback(l.Port)] = l
				}
			}
			want := []string{"hop1.envoy", "hop2#0.envoy", "hop2#1.envoy", "hop3.envoy"}
			if mode == "node" {
				want = []string{"node.envoy"}
			}
			if !slices.Equal(names, want) {
				t.Errorf("proxies %v, want %v", names, want)
			}
			// Each of hop2's inbound listeners leads to its own replica.
			for r, a := range hop2 {
				if l := byAddr[a]; !slices.Equal(l.Upstreams, []string{fmt.Sprintf("10.0.1.%d:hop2", r)}) {
					t.Errorf("hop2 replica %d's inbound listener leads to %v", r, l.Upstreams)
				}
			}
			// hop1 balances over both.
			out := byAddr[lay.Peers[0][0]["hop2"]]
			if !slices.Equal(out.Upstreams, hop2) {
				t.Errorf("hop1's way to hop2 leads to %v, want both replicas %v", out.Upstreams, hop2)
			}
			// Each replica of hop2 calls hop3 through a listener of its
			// own sidecar, or of the node proxy's one.
			a0, a1 := lay.Peers[1][0]["hop3"], lay.Peers[1][1]["hop3"]
			if a0 == "" || a1 == "" || (mode == "sidecar") != (a0 != a1) {
				t.Errorf("hop2's replicas call hop3 through %q and %q", a0, a1)
			}
			for _, a := range []string{a0, a1} {
				if l := byAddr[a]; !slices.Equal(l.Upstreams, lay.Inbound["hop3"]) {
					t.Errorf("hop2's way to hop3 at %s leads to %v, want %v", a, l.Upstreams, lay.Inbound["hop3"])
				}
			}
		})
	}
}
