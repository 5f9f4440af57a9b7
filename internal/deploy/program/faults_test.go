package program

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy/sidecar"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// faultOf is topo's fault of kind.
func faultOf(t *testing.T, topo *runtime.Topology, kind string) runtime.Fault {
	t.Helper()
	i := slices.IndexFunc(topo.Faults, func(f runtime.Fault) bool { return f.Kind == kind })
	if i < 0 {
		t.Fatalf("no %s fault in %+v", kind, topo.Faults)
	}
	return topo.Faults[i]
}

// TestHopFaults: a hop fault acts on the hop into a real program, between
// its callers and it: a latency spike on nginx's hop delays the
// frontend's answers by its delay, a reset on Redis's makes the frontend
// answer Redis's error, and each ends when stopped. The load's hop into
// the entry has no fault proxy: it reaches the entry at its own address,
// or with sidecars at its proxy's ingress listener.
func TestHopFaults(t *testing.T) {
	need(t, "python3", "redis-server", "nginx")
	for _, mesh := range [][]string{nil, {`deploy.sidecar="envoy"`, "deploy.mtls=true"}} {
		t.Run(fmt.Sprintf("sidecars=%v", mesh != nil), func(t *testing.T) {
			if mesh != nil {
				k, _ := sidecar.Lookup("envoy")
				if _, err := k.Binary(); err != nil {
					t.Skip(err)
				}
			}
			hopFaults(t, mesh)
		})
	}
}

// hopFaults runs TestHopFaults with the spec's settings sets; with
// sidecars, the fault proxies stand between the caller's proxy and the
// callee's.
func hopFaults(t *testing.T, sets []string) {
	s, err := spec.Load("testdata/system/spec.toml", append([]string{
		`deploy.faults.latency_spike.target="static"`, `deploy.faults.latency_spike.delay="300ms"`,
		`deploy.faults.reset.target="cart"`, `deploy.faults.reset.fraction=1.0`}, sets...)...)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	dep, err := deployOf(t, topo)
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*deployment)
	for _, c := range []string{"cart", "static"} {
		if len(d.hops[c]) != 1 {
			t.Errorf("fault proxies before %s: %v, want one", c, d.hops[c])
		} else if up := d.hops[c][0].Upstream; sets == nil && up != d.addrs[c] || sets != nil && up != d.inboundOf(c, 0) {
			t.Errorf("the fault proxy before %s forwards to %s, not to its address %s or its sidecar's %s", c, up, d.addrs[c], d.inboundOf(c, 0))
		}
		if d.peersOf("frontend", 0)[c] == d.addrs[c] {
			t.Errorf("the frontend reaches %s at its own address %s, not through the fault proxy", c, d.addrs[c])
		}
	}
	if d.hops["frontend"] != nil || d.GatewayURL() != "http://"+d.addrs["frontend"] {
		t.Errorf("the load reaches the entry at %s, not at %s (its own address, or its proxy's ingress listener)", d.GatewayURL(), d.addrs["frontend"])
	}
	// A connection per call: the frontend serves each on a thread of its
	// own, with fresh connections to its callees.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	call := func() (int, string, time.Duration) {
		t.Helper()
		start := time.Now()
		resp, err := client.Get(d.GatewayURL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b), time.Since(start)
	}
	hf := dep.Capabilities().HopFaults
	if hf == nil {
		t.Fatal("a deployment of programs has no HopFaults")
	}
	if code, body, took := call(); code != 200 || took >= 300*time.Millisecond {
		t.Fatalf("before the faults: %d %q in %s", code, body, took)
	}
	stop, err := hf.StartFault(faultOf(t, topo, spec.FaultLatencySpike))
	if err != nil {
		t.Fatal(err)
	}
	if code, body, took := call(); code != 200 || took < 300*time.Millisecond {
		t.Errorf("in the latency spike on static's hop: %d %q in %s, want 200 in at least 300ms", code, body, took)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if code, body, took := call(); code != 200 || took >= 300*time.Millisecond {
		t.Errorf("after the latency spike: %d %q in %s, want 200 in less than 300ms", code, body, took)
	}
	if stop, err = hf.StartFault(faultOf(t, topo, spec.FaultReset)); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := call(); code != http.StatusBadGateway {
		t.Errorf("in the reset of cart's hop: %d %q, want 502 (the frontend's answer to a failed Redis call)", code, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := call(); code != 200 {
		t.Errorf("after the reset: %d %q", code, body)
	}
}

// TestKill: a kill fault ends a replica with SIGKILL: its callers' front
// stops sending to it, the calls go on over the others, and its exit is
// no failure: neither reported on Exited nor listed in Processes.
func TestKill(t *testing.T) {
	need(t, "python3", "redis-server")
	topo := writeSpec(t, replicaSpec)
	dep, err := deployOf(t, topo)
	if err != nil {
		t.Fatal(err)
	}
	k := dep.Capabilities().Killer
	if k == nil {
		t.Fatal("a deployment of programs has no Killer")
	}
	backend := topo.GroupOf("backend")
	info, err := k.Kill(backend, 1)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "backend#1" {
		t.Errorf("killed %s, want backend#1", info.Name)
	}
	if !groupGone(info.PID) {
		t.Errorf("process group %d of %s outlived the kill", info.PID, info.Name)
	}
	var left []string
	for _, p := range dep.Processes() {
		left = append(left, p.Info().Name)
	}
	if slices.Contains(left, "backend#1") || len(left) != 5 {
		t.Errorf("processes after the kill: %v, want the five others", left)
	}
	seen := spread(t, dep, 10)
	if dead := dep.(*deployment).replicas["backend"][1]; seen[dead] != 0 || len(seen) != 2 {
		t.Errorf("calls after the kill went to %v, want both survivors", seen)
	}
	// Ordinals count the running replicas, as the local deployer's: the
	// second is now what was the third.
	if info, err := k.Kill(backend, 1); err != nil || info.Name != "backend#2" {
		t.Errorf("the second kill ended %s (%v), want backend#2", info.Name, err)
	}
	if _, err := k.Kill(backend, 1); err == nil || !strings.Contains(err.Error(), "component backend has no running replica 1") {
		t.Errorf("a kill of a replica no longer there: %v", err)
	}
	select {
	case p := <-dep.Exited():
		t.Errorf("a killed replica was reported on Exited: %s", p.Info())
	case <-time.After(time.Second):
	}
	if err := dep.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
