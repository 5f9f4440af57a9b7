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
	"syscall"
	"testing"
	"time"

	_ "github.com/svclab/svclab/apps/all"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	_ "github.com/svclab/svclab/internal/deploy/local" // the deployer netns hands its machines to
	"github.com/svclab/svclab/internal/deploy/netns"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
)

func TestMain(m *testing.M) {
	hostentry.RunIfChild()
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

// twoMachines is the chain split over two machines: hop1 on vm1, the rest on vm2.
func twoMachines(tr, link string) string {
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

// netnsOf names the network namespace of process pid (of its main
// thread).
// ownNS is this test process's network namespace as it started, read
// before any test made one. /proc/<pid>/ns/net is the main thread's, and
// Go may leave its main thread in a namespace a locked goroutine entered
// and ended in (it does not end the main thread): then a host of that
// machine read as running in svclab's own namespace (seen in make test,
// 2026-11-27 and 2026-11-28).
var ownNS = func() string {
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		panic(err)
	}
	return ns
}()

func netnsOf(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// deployed deploys body over two machines. Stop, at the test's end, must
// leave none of the deployment's namespaces, nor any process of its
// processes' groups.
func deployed(t *testing.T, body string) (deploy.Deployment, *runtime.Topology) {
	t.Helper()
	s := load(t, body)
	d, topo, err := deploy.Resolve(s)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	nsPaths := dep.(*netns.Deployment).Namespaces()
	if len(nsPaths) != 4 {
		t.Errorf("namespaces %v, want 4: router, client, two machines", nsPaths)
	}
	var pids []int
	for _, p := range dep.Processes() {
		pids = append(pids, p.Info().PID)
	}
	t.Cleanup(func() {
		if err := dep.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		for _, p := range nsPaths {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("namespace %s left after stop", p)
			}
		}
		for _, pid := range pids {
			if err := syscall.Kill(-pid, 0); err != syscall.ESRCH {
				t.Errorf("process group %d (%q) left after stop", pid, cmdline(pid))
			}
		}
	})
	return dep, topo
}

// TestChainTwoMachines deploys the chain over two machines on every
// cross-process transport, calls it through the client's namespace and
// through the gateway forwarder, and checks that hop1 and hop2 run in
// different network namespaces from svclab's.
func TestChainTwoMachines(t *testing.T) {
	needRoot(t)
	for _, tr := range []string{"grpc", "http", "netrpc", "protorpc"} {
		for _, link := range []string{"", `latency = "2ms"`} {
			name := tr + "/unshaped"
			if link != "" {
				name = tr + "/2ms"
			}
			t.Run(name, func(t *testing.T) {
				dep, topo := deployed(t, twoMachines(tr, link))
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
				self := ownNS
				seen := map[string]string{}
				for _, p := range dep.Processes() {
					ns := netnsOf(t, p.Info().PID)
					if ns == self {
						// Say what that PID is now, should it be another.
						t.Errorf("%s runs in svclab's own network namespace (its command line now: %q)", p.Info(), cmdline(p.Info().PID))
					}
					seen[ns] = p.Info().Name
				}
				if len(seen) != 2 {
					t.Errorf("processes in %d namespaces, want 2 (one per machine): %v", len(seen), seen)
				}
				var desc bytes.Buffer
				deploy.Describe(&desc, dep)
				for _, want := range []string{"machine vm1: 10.77.0.3, groups hop1", "machine vm2: 10.77.0.4, groups hop2", "gateway: " + dep.GatewayURL()} {
					if !bytes.Contains(desc.Bytes(), []byte(want)) {
						t.Errorf("describe lacks %q:\n%s", want, desc.String())
					}
				}
				if shaped := bytes.Contains(desc.Bytes(), []byte("link vm1-vm2: latency 2ms")); shaped != (link != "") {
					t.Errorf("describe shows the vm1-vm2 link: %v, want %v:\n%s", shaped, link != "", desc.String())
				}
				if nd, ok := dep.(*netns.Deployment); !ok {
					t.Errorf("deployment is %T", dep)
				} else if got := []string{nd.MachineOf(0), nd.MachineOf(1)}; !sort.StringsAreSorted(got) || got[0] != "vm1" || got[1] != "vm2" {
					t.Errorf("machines of groups: %v", got)
				}
			})
		}
	}
}

// TestDeployedLinkLatency measures the chain's calls with a 10 ms link
// between vm1 and vm2 (the client's link unshaped) against the same
// deployment with every link unshaped: each call crosses vm1→vm2 once and
// back, so the p50 must grow by the link's 10 ms.
func TestDeployedLinkLatency(t *testing.T) {
	needRoot(t)
	netns.NeedAccuracyRun(t)
	p50 := func(link string) time.Duration {
		dep, topo := deployed(t, twoMachines("grpc", link))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := dep.Dial(ctx, transport.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r := topo.Requests()[0]
		var d []time.Duration
		for i := -20; i < 200; i++ {
			start := time.Now()
			if _, err := r.Invoke(ctx, conn); err != nil {
				t.Fatal(err)
			}
			if i >= 0 {
				d = append(d, time.Since(start))
			}
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return (d[99] + d[100]) / 2
	}
	base := p50("")
	shaped := p50("latency = \"10ms\"\n[deploy.links.\"client-vm1\"]\nlatency = \"0ms\"")
	t.Logf("p50 call: %s unshaped, %s with a 10 ms vm1-vm2 link", base, shaped)
	// The link alone holds ±0.5 ms (TestLinkLatency, BenchmarkLink10ms).
	// Through a deployed chain, a link of 3 ms or more adds about 1 ms
	// more, whatever its length (measured: 1ns +0.14 ms, 3 ms +3.4, 10 ms
	// +10.6–11.8, 30 ms +30.9): the machines fall idle between calls and take
	// that long to wake on a loaded 2-core machine, as they would behind a
	// real link of that length. So the bound is -0.5 ms, +2 ms: it catches
	// a link that is missing, doubled or a step off.
	if d := shaped - base; d < 9500*time.Microsecond || d > 12*time.Millisecond {
		t.Errorf("a 10 ms link added %s to the p50 call, want 10ms (+2ms/-0.5ms)", d)
	}
}
