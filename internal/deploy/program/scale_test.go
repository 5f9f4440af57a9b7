package program

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// answering is a spec of web, which answers its own address and, with
// spin, keeps a core busy, under the given [deploy] tables.
func answering(spin bool, tables string) string {
	program := answersOwnAddress
	if spin {
		program = "\nimport threading\nthreading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()" + program
	}
	return `[app]
name = "exec"
entry = "web"
[app.components.web]
command = ["python3", "-c", '''` + program + `''', "{listen}"]
protocol = "http"
` + tables
}

// spread calls dep's entry n times (a connection each) and counts the
// answers, each a replica's address.
func spread(t *testing.T, dep deploy.Deployment, n int) map[string]int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	seen := map[string]int{}
	for range n {
		resp, err := client.Get(dep.GatewayURL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s", resp.Status, b)
		}
		seen[string(b)]++
	}
	return seen
}

// TestScale: Scale adds replicas of a program behind the front its callers
// and the load reach, under new names and ports, and the front spreads
// the calls over them once healthy; scaling in takes the newest out of
// the front and stops them, as processes meant to end (not on Exited).
func TestScale(t *testing.T) {
	need(t, "python3")
	topo := writeSpec(t, answering(false, "[deploy.autoscale.web]\nmin = 1\nmax = 3\ncpu_target = 80\nsync_period = \"1h\"\n"))
	dep, err := deployOf(t, topo)
	if err != nil {
		t.Fatal(err)
	}
	d := dep.(*deployment)
	if d.fronts["web"] == nil || d.GatewayURL() != "http://"+d.fronts["web"].Addr() {
		t.Fatalf("an autoscaled program of one replica has no front: the load reaches %s", d.GatewayURL())
	}
	names := func() []string {
		var out []string
		for _, p := range dep.Processes() {
			out = append(out, p.Info().Name)
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Scale(ctx, "web", 3); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 3 || got[0] != "web#0" || got[1] != "web#1" || got[2] != "web#2" {
		t.Errorf("processes after scaling out: %v, want web#0 to web#2", got)
	}
	if seen := spread(t, dep, 9); len(seen) != 3 {
		t.Errorf("9 calls after scaling to 3 reached %v, want all three replicas", seen)
	}
	if err := d.Scale(ctx, "web", 1); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 1 || got[0] != "web#0" {
		t.Errorf("processes after scaling in: %v, want web#0", got)
	}
	if seen := spread(t, dep, 4); len(seen) != 1 || seen[d.replicas["web"][0]] != 4 {
		t.Errorf("calls after scaling to 1 reached %v, want web#0 at %s alone", seen, d.replicas["web"][0])
	}
	// Ordinals are never reused: a name is one process's.
	if err := d.Scale(ctx, "web", 2); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 2 || got[1] != "web#3" {
		t.Errorf("processes after scaling out again: %v, want web#0 and web#3", got)
	}
	select {
	case p := <-dep.Exited():
		t.Errorf("a replica scaled in was reported on Exited: %s", p.Info())
	case <-time.After(500 * time.Millisecond):
	}
	if err := d.Scale(ctx, "nothing", 2); err == nil {
		t.Error("Scale of a group that does not exist succeeded")
	}
}

// TestAutoscale: [deploy.autoscale] scales a CPU-bound program out behind
// its front, and its decisions are the deployment's Scaling.
func TestAutoscale(t *testing.T) {
	need(t, "python3")
	topo := writeSpec(t, answering(true, "[deploy.autoscale.web]\nmin = 1\nmax = 2\ncpu_target = 20\nsync_period = \"500ms\"\n"))
	dep, err := deployOf(t, topo)
	if err != nil {
		t.Fatal(err)
	}
	as := dep.Capabilities().Scaling
	if as == nil {
		t.Fatal("a deployment of programs has no Scaling")
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(dep.Processes()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("a program spinning a core did not scale out past cpu_target 20 in 30s; decisions: %+v", as.ScaleEvents())
		}
		time.Sleep(100 * time.Millisecond)
	}
	events := as.ScaleEvents()
	if len(events) == 0 || events[len(events)-1].Group != "web" || events[len(events)-1].Desired != 2 {
		t.Errorf("decisions %+v, want the last to scale web to 2", events)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		seen := spread(t, dep, 4)
		if len(seen) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls after scaling out reached %v, want both replicas", seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
