package local_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/sidecar"
)

// TestSidecarScaleProxies deploys chain with hop2 in 3 replicas behind
// nginx or HAProxy sidecars and, while calls run, adds a fourth replica and
// scales it away again: no proxy that ran before restarts (nginx reloads,
// HAProxy takes the change through its runtime API), the added replica
// gets calls through its own sidecar, which leaves with it, no call fails
// beyond those in flight to the replica removed, and the three first
// replicas served within ±10% of an even share.
func TestSidecarScaleProxies(t *testing.T) {
	for _, sc := range []string{"nginx", "haproxy"} {
		t.Run(sc, func(t *testing.T) {
			proxyOrSkip(t, sc)
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \"grpc\"\nsidecar = \""+sc+"\"\n[deploy.replicas]\nhop2 = 3\n")
			ctx, d := deployFor(t, p)
			before := proxies(d)
			conn := dialEntry(t, ctx, d)
			if ok, failed := callN(ctx, p, conn, 4, 30); failed > 0 {
				t.Fatalf("before scaling: %d calls ok, %d failed", ok, failed)
			}
			const workers = 4
			stop := make(chan struct{})
			var okN, failedN int64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				okN, failedN = callLoad(p, conn, workers, stop)
			}()
			time.Sleep(200 * time.Millisecond)
			err := d.Scale(ctx, "hop2", 4)
			var added deploy.Process
			var addedProxy deploy.Process
			if err == nil {
				hosts := hostsOf(d, "hop2")
				added = hosts[len(hosts)-1]
				addedProxy = proxies(d)["hop2#3."+sc]
				time.Sleep(700 * time.Millisecond)
				err = d.Scale(ctx, "hop2", 3)
			}
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("while scaling: %d calls ok, %d failed", okN, failedN)
			if failedN > workers {
				t.Errorf("%d calls failed while a replica was added and removed, want at most %d (those in flight to it)", failedN, workers)
			}
			if addedProxy == nil {
				t.Fatalf("no sidecar hop2#3.%s after Scale(4); proxies %v", sc, proxies(d))
			}
			checkNoRestart(t, d, before)
			<-added.Done()
			if n := served(t, added); n == 0 {
				t.Errorf("%s, added behind its sidecar while hop1 ran, got no call", added.Info().Name)
			}
			select {
			case <-addedProxy.Done():
			case <-time.After(10 * time.Second):
				t.Errorf("sidecar %s still runs after its replica was scaled away", addedProxy.Info().Name)
			}
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			var counts []int
			total := 0
			for _, pr := range hostsOf(d, "hop2") {
				n := served(t, pr)
				counts = append(counts, n)
				total += n
			}
			if len(counts) != 3 {
				t.Fatalf("hop2 has %d hosts at the end, want 3", len(counts))
			}
			share := float64(total) / 3
			for i, n := range counts {
				if float64(n) < 0.9*share || float64(n) > 1.1*share {
					t.Errorf("hop2#%d served %d of %d calls, want %.0f ± 10%%", i, n, total, share)
				}
			}
		})
	}
}

// TestSidecarAutoscaleEnvoy: the autoscaler, not a test, scales hop2
// behind Envoy sidecars out under a CPU-heavy load (the large payload, a
// 5% target, a 500 ms sync period); each replica it adds has its own
// sidecar, and no call fails.
func TestSidecarAutoscaleEnvoy(t *testing.T) {
	proxyOrSkip(t, "envoy")
	p := resolve(t, `[app]
name = "chain"
payload = "large"
[deploy]
placement = "split"
sidecar = "envoy"
[deploy.autoscale.hop2]
min = 1
max = 3
cpu_target = 5
sync_period = "500ms"
scale_down_window = "60s"
`)
	ctx, d := deployFor(t, p)
	conn := dialEntry(t, ctx, d)
	stop := make(chan struct{})
	start := time.Now()
	peak := 1
	go func() {
		defer close(stop)
		// Bounded, and generous: a loaded machine is slow to burn its target.
		for time.Since(start) < 30*time.Second {
			n, _ := d.Replicas("hop2")
			peak = max(peak, n)
			if peak > 1 {
				time.Sleep(time.Second) // the new replica serves a while
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	ok, failed := callLoad(p, conn, 4, stop)
	if peak < 2 {
		t.Fatalf("hop2 never scaled up under the load (%d calls ok); decisions:\n%s", ok, events(d))
	}
	t.Logf("%d calls ok, %d failed; peak %d replicas", ok, failed, peak)
	if failed > 0 {
		t.Errorf("%d calls failed while the autoscaler scaled up", failed)
	}
	px := proxies(d)
	for r := 1; r < peak; r++ {
		name := fmt.Sprintf("hop2#%d.envoy", r)
		if px[name] == nil {
			t.Errorf("replica %d, added by the autoscaler, has no sidecar %s; proxies %v", r, name, px)
		}
	}
	ups := 0
	for _, e := range d.ScaleEvents() {
		if e.Group == "hop2" && e.Desired > e.Current && e.Error == "" {
			ups++
		}
	}
	if ups == 0 {
		t.Errorf("no scale-up decision recorded; decisions:\n%s", events(d))
	}
}

// TestSidecarScaleUpFails makes the proxy program fail for a replica that
// Scale adds (a wrapper runs the real Envoy until a marker file exists):
// Scale fails naming the replica's sidecar, the new replica's process, its
// sidecar's directory and ports are gone, and the replica that ran before
// keeps serving through its sidecar.
func TestSidecarScaleUpFails(t *testing.T) {
	proxyOrSkip(t, "envoy")
	k, _ := sidecar.Lookup("envoy")
	real, _ := k.Binary()
	dir := t.TempDir()
	marker := filepath.Join(dir, "fail")
	wrapper := filepath.Join(dir, "envoy")
	kept := filepath.Join(dir, "failed.json")
	// On failing, the wrapper keeps the configuration it was given ($2
	// after -c), so that the test knows the ports it would have bound.
	script := fmt.Sprintf("#!/bin/sh\nif [ -e %q ]; then cp \"$2\" %q; echo 'envoy: refusing to start (test marker)' >&2; exit 1; fi\nexec %q \"$@\"\n", marker, kept, real)
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SVCLAB_ENVOY", wrapper)
	p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \"grpc\"\nsidecar = \"envoy\"\n[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 90\n")
	ctx, d := deployFor(t, p)
	conn := dialEntry(t, ctx, d)
	before := proxies(d)
	var deployDir string
	if pr := before["hop1.envoy"]; pr != nil {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pr.Info().PID))
		if err != nil {
			t.Fatal(err)
		}
		deployDir = filepath.Dir(cwd)
	} else {
		t.Fatalf("no sidecar hop1.envoy among %v", before)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := d.Scale(ctx, "hop2", 2)
	if err == nil {
		t.Fatal("Scale succeeded though the new replica's proxy cannot start")
	}
	t.Logf("Scale: %v", err)
	for _, want := range []string{"hop2#1.envoy", "refusing to start"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Scale's error does not name %q: %v", want, err)
		}
	}
	if n, _ := d.Replicas("hop2"); n != 1 {
		t.Errorf("hop2 has %d replicas after the failed scale-up, want 1", n)
	}
	for _, pr := range d.Processes() {
		if strings.HasPrefix(pr.Info().Name, "hop2#1") {
			t.Errorf("process %s of the failed replica is still the deployment's", pr.Info().Name)
		}
	}
	entries, _ := os.ReadDir(deployDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "hop2#1") {
			t.Errorf("%s of the failed replica is left in the deployment's directory", e.Name())
		}
	}
	// The ports the failed sidecar was given are free again.
	cfg, err := os.ReadFile(kept)
	if err != nil {
		t.Fatalf("the wrapper kept no configuration: %v", err)
	}
	ports := regexp.MustCompile(`"port_value": (\d+)`).FindAllStringSubmatch(string(cfg), -1)
	if len(ports) == 0 {
		t.Fatalf("no port in the failed sidecar's configuration:\n%s", cfg)
	}
	for _, m := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+m[1])
		if err != nil {
			t.Errorf("port %s of the failed sidecar is still taken: %v", m[1], err)
			continue
		}
		_ = l.Close()
	}
	if ok, failed := callN(ctx, p, conn, 2, 10); failed > 0 {
		t.Errorf("after the failed scale-up: %d calls ok, %d failed; want none failed", ok, failed)
	}
	checkNoRestart(t, d, before)
}
