package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
)

// callN makes workers × each calls of the entry's first request; a fixed
// count, not a duration, since a proxied call can take tens of
// milliseconds on a loaded machine.
func callN(ctx context.Context, p *runtime.Topology, conn transport.Conn, workers, each int) (ok, failed int64) {
	req := p.Requests()[0]
	var wg sync.WaitGroup
	var nOK, nFail atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				if _, err := req.Invoke(cctx, conn); err != nil {
					nFail.Add(1)
				} else {
					nOK.Add(1)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	return nOK.Load(), nFail.Load()
}

// proxies maps the name of each proxy process of d to it.
func proxies(d *local.Deployment) map[string]deploy.Process {
	out := map[string]deploy.Process{}
	for _, p := range d.Processes() {
		if p.Info().Role != deploy.RoleHost {
			out[p.Info().Name] = p
		}
	}
	return out
}

// checkNoRestart fails the test if a proxy of before has exited or was
// replaced by another process.
func checkNoRestart(t *testing.T, d *local.Deployment, before map[string]deploy.Process) {
	t.Helper()
	now := proxies(d)
	for name, p := range before {
		select {
		case <-p.Done():
			t.Errorf("proxy %s exited: %s", name, p.Exit().Status)
			continue
		default:
		}
		if q, ok := now[name]; !ok || q.Info().PID != p.Info().PID {
			t.Errorf("proxy %s (pid %d) is no longer the deployment's", name, p.Info().PID)
		}
	}
}

// edsFile reads the endpoint file of hop1's sidecar's way to hop2, as
// Envoy reads it.
func edsFile(t *testing.T, d *local.Deployment) string {
	t.Helper()
	for _, p := range d.Processes() {
		if p.Info().Name != "hop1.envoy" {
			continue
		}
		dir, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.Info().PID), "cwd"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "eds", "to_out_0_hop2.json"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t.Fatal("no proxy hop1.envoy")
	return ""
}

// TestSidecarSpreadEnvoy deploys chain with hop2 in 3 replicas, each
// behind its own Envoy: hop1's sidecar spreads hop1's calls over hop2's
// sidecars, each replica within ±10% of an even share, on grpc and http.
func TestSidecarSpreadEnvoy(t *testing.T) {
	t.Parallel()
	proxyOrSkip(t, "envoy")
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \""+tr+"\"\nsidecar = \"envoy\"\n[deploy.replicas]\nhop2 = 3\n")
			ctx, d := deployFor(t, p)
			conn := dialEntry(t, ctx, d)
			ok, failed := callN(ctx, p, conn, 4, 45)
			if failed > 0 {
				t.Fatalf("%d calls ok, %d failed", ok, failed)
			}
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			share := float64(ok) / 3
			for _, pr := range hostsOf(d, "hop2") {
				n := served(t, pr)
				// The deployer's health checks count too: a few.
				if float64(n) < 0.9*share || float64(n) > 1.1*share+5 {
					t.Errorf("%s served %d of %d calls, want %.0f ± 10%%", pr.Info().Name, n, ok, share)
				}
			}
		})
	}
}

// TestSidecarScaleEnvoy scales hop2, behind Envoy sidecars, from 1 to 3
// replicas and back to 1 under load: no call fails, the replicas added get
// calls through their own sidecars, no proxy that ran before restarts, and
// the replicas scaled away stop cleanly with their sidecars.
func TestSidecarScaleEnvoy(t *testing.T) {
	t.Parallel()
	proxyOrSkip(t, "envoy")
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \""+tr+"\"\nsidecar = \"envoy\"\n[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 50\n")
			ctx, d := deployFor(t, p)
			before := proxies(d)
			conn := dialEntry(t, ctx, d)
			if ok, failed := callN(ctx, p, conn, 4, 5); failed > 0 {
				t.Fatalf("before scaling: %d calls ok, %d failed", ok, failed)
			}
			if err := d.Scale(ctx, "hop2", 3); err != nil {
				t.Fatal(err)
			}
			added := hostsOf(d, "hop2")[1:]
			if len(added) != 2 {
				t.Fatalf("hop2 has %d hosts after Scale(3), want 3", len(added)+1)
			}
			addedProxies := map[string]deploy.Process{}
			for name, pr := range proxies(d) {
				if _, ok := before[name]; !ok {
					addedProxies[name] = pr
				}
			}
			if len(addedProxies) != 2 || addedProxies["hop2#1.envoy"] == nil || addedProxies["hop2#2.envoy"] == nil {
				t.Fatalf("proxies added %v, want hop2#1.envoy and hop2#2.envoy", addedProxies)
			}
			eds := edsFile(t, d)
			for _, pr := range addedProxies {
				for _, ep := range pr.Listeners() {
					_, port, _ := strings.Cut(ep.Addr, ":")
					if !strings.Contains(eds, `"port_value":`+port) {
						t.Errorf("hop1's sidecar's endpoints lack %s's inbound listener %s:\n%s", pr.Info().Name, ep.Addr, eds)
					}
				}
			}
			// The load runs while the scale down does.
			done := make(chan error, 1)
			var okN, failedN int64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				okN, failedN = callN(ctx, p, conn, 4, 40)
			}()
			time.Sleep(300 * time.Millisecond)
			go func() { done <- d.Scale(ctx, "hop2", 1) }()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if failedN > 0 {
				t.Errorf("%d calls ok, %d failed while scaling down; want none failed", okN, failedN)
			}
			checkNoRestart(t, d, before)
			for _, pr := range added {
				<-pr.Done()
				if pr.Exit().Status != "exit status 0" {
					t.Errorf("%s ended %s, want a clean stop", pr.Info().Name, pr.Exit().Status)
				}
				if n := served(t, pr); n == 0 {
					t.Errorf("%s, added behind its sidecar while hop1 ran, got no call", pr.Info().Name)
				}
			}
			for name, pr := range addedProxies {
				select {
				case <-pr.Done():
				case <-time.After(10 * time.Second):
					t.Errorf("sidecar %s still runs after its replica was scaled away", name)
				}
				if _, ok := proxies(d)[name]; ok {
					t.Errorf("sidecar %s is still a process of the deployment", name)
				}
			}
			eds = edsFile(t, d)
			for _, pr := range addedProxies {
				for _, ep := range pr.Listeners() {
					_, port, _ := strings.Cut(ep.Addr, ":")
					if strings.Contains(eds, `"port_value":`+port) {
						t.Errorf("hop1's sidecar's endpoints still have %s's %s:\n%s", pr.Info().Name, ep.Addr, eds)
					}
				}
			}
			select {
			case ex := <-d.Exited():
				t.Errorf("%s reported as exited: scaling away is no crash", ex.Info().Name)
			default:
			}
		})
	}
}

// TestSidecarReplicaKilledEnvoy kills one of 3 replicas of hop2 behind
// Envoy sidecars: the deployment reports it, its sidecar's inbound
// listener leaves hop1's sidecar's endpoints (no proxy restarts), and
// every call after that succeeds on the two others, which serve them all.
func TestSidecarReplicaKilledEnvoy(t *testing.T) {
	t.Parallel()
	proxyOrSkip(t, "envoy")
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \""+tr+"\"\nsidecar = \"envoy\"\n[deploy.replicas]\nhop2 = 3\n")
			ctx, d := deployFor(t, p)
			before := proxies(d)
			conn := dialEntry(t, ctx, d)
			hop2 := hostsOf(d, "hop2")
			victim := hop2[1]
			victimProxy := before["hop2#1.envoy"]
			if victimProxy == nil {
				t.Fatalf("no sidecar hop2#1.envoy among %v", before)
			}
			var victimPort string
			for _, ep := range victimProxy.Listeners() {
				_, victimPort, _ = strings.Cut(ep.Addr, ":")
			}
			const workers = 4
			stop := make(chan struct{})
			time.AfterFunc(300*time.Millisecond, func() { _ = syscall.Kill(victim.Info().PID, syscall.SIGKILL) })
			time.AfterFunc(1300*time.Millisecond, func() { close(stop) })
			ok1, failed1 := callLoad(p, conn, workers, stop)
			t.Logf("around the kill: %d calls ok, %d failed", ok1, failed1)
			if failed1 > workers {
				t.Errorf("%d calls failed around the kill, want at most %d (those in flight to it)", failed1, workers)
			}
			select {
			case ex := <-d.Exited():
				if ex.Info().Name != victim.Info().Name {
					t.Errorf("exited %s, want %s", ex.Info().Name, victim.Info().Name)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the deployment did not report the killed replica")
			}
			if eds := edsFile(t, d); strings.Contains(eds, `"port_value":`+victimPort) {
				t.Errorf("hop1's sidecar still sends to the dead replica's sidecar (port %s):\n%s", victimPort, eds)
			}
			ok2, failed2 := callN(ctx, p, conn, workers, 30)
			if failed2 > 0 {
				t.Errorf("after the kill: %d calls ok, %d failed; want none failed", ok2, failed2)
			}
			checkNoRestart(t, d, before)
			if err := d.Stop(ctx); err != nil && !strings.Contains(err.Error(), victim.Info().Name) {
				t.Fatal(err)
			}
			total := 0
			for _, pr := range []deploy.Process{hop2[0], hop2[2]} {
				total += served(t, pr)
			}
			// The survivors served every call after the kill, and all but
			// the victim's share of those before it.
			if int64(total) < ok2+ok1/2 {
				t.Errorf("the two survivors served %d calls; the client made %d after the kill and %d around it", total, ok2, ok1)
			}
		})
	}
}
