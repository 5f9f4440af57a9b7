package netns_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/svclab/svclab/apps/all"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/deploy/netns"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
)

func TestMain(m *testing.M) {
	local.RunIfChild()
	if path := os.Getenv(upSpecEnv); path != "" {
		os.Exit(runUp(path))
	}
	if path := os.Getenv(deployEnv); path != "" {
		os.Exit(runDeploy(path))
	}
	os.Exit(m.Run())
}

// needRoot skips a test that creates namespaces when it cannot.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the netns deployer creates network namespaces")
	}
}

func load(t *testing.T, body string) *spec.Spec {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatalf("load spec: %v", err)
	}
	return s
}

// twoHosts is the chain split over two hosts: hop1 on vm1, the rest on vm2.
func twoHosts(tr, link string) string {
	return fmt.Sprintf(`[app]
name = "chain"
hops = 2
[deploy]
deployer = "netns"
transport = %q
placement = "split"
[deploy.hosts.vm1]
groups = ["hop1"]
[deploy.hosts.vm2]
groups = ["hop2"]
[deploy.link]
%s
`, tr, link)
}

func deployed(t *testing.T, body string) (deploy.Deployment, *runtime.Topology) {
	t.Helper()
	s := load(t, body)
	d, topo, err := deploy.Resolve(s)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	t.Cleanup(func() {
		if err := dep.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		if left := ours(t); len(left) > 0 {
			t.Errorf("namespaces left after stop: %v", left)
		}
	})
	return dep, topo
}

// ours lists the namespaces this process owns.
func ours(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	prefix := fmt.Sprintf("svclab-%d-", os.Getpid())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestChainTwoHosts deploys the chain over two hosts on every
// cross-process transport, calls it through the client's namespace and
// through the gateway forwarder, and checks that hop1 and hop2 run in
// different network namespaces from svclab's.
func TestChainTwoHosts(t *testing.T) {
	needRoot(t)
	for _, tr := range []string{"grpc", "http", "netrpc", "protorpc"} {
		for _, link := range []string{"", `latency = "2ms"`} {
			name := tr + "/unshaped"
			if link != "" {
				name = tr + "/2ms"
			}
			t.Run(name, func(t *testing.T) {
				dep, topo := deployed(t, twoHosts(tr, link))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				conn, err := dep.Dial(ctx, transport.DialOptions{})
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				defer conn.Close()
				for _, r := range topo.Requests() {
					start := time.Now()
					if _, err := r.Invoke(ctx, conn); err != nil {
						t.Fatalf("%s: %v", r.Name, err)
					}
					// Client→vm1 and vm1→vm2 each cross a 2 ms link.
					if el := time.Since(start); link != "" && el < 4*time.Millisecond {
						t.Errorf("%s took %s over two 2 ms links", r.Name, el)
					}
				}
				r := topo.Requests()[0]
				resp, err := http.Post(dep.GatewayURL()+r.Method, "application/json", bytes.NewReader(r.JSON()))
				if err != nil {
					t.Fatalf("gateway: %v", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("gateway: %s: %s", resp.Status, body)
				}
				self, err := os.Readlink("/proc/self/ns/net")
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]string{}
				for _, p := range dep.Processes() {
					ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", p.Info().PID))
					if err != nil {
						t.Fatal(err)
					}
					if ns == self {
						t.Errorf("%s runs in svclab's own network namespace", p.Info())
					}
					seen[ns] = p.Info().Name
				}
				if len(seen) != 2 {
					t.Errorf("processes in %d namespaces, want 2 (one per host): %v", len(seen), seen)
				}
				if nd, ok := dep.(*netns.Deployment); !ok {
					t.Errorf("deployment is %T", dep)
				} else if got := []string{nd.HostOf(0), nd.HostOf(1)}; !sort.StringsAreSorted(got) || got[0] != "vm1" || got[1] != "vm2" {
					t.Errorf("hosts of groups: %v", got)
				}
			})
		}
	}
}
