package netns_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
)

var servedRE = regexp.MustCompile(regexp.QuoteMeta(runtime.ServedMarker) + ` (\d+) calls`)

// TestEntryReplicas runs two replicas of the entry (hop1) on vm1 behind a
// 1 ms link from the client, and calls it through the gateway and through
// the client's connection: each way spreads its calls round robin over
// both replicas (each serves half, ±10%), and every call crosses the
// client's link and the vm1-vm2 link: 2 ms, less what the links may wake
// early (a quarter of each one-way delay, toxic.go), so at least 1.5 ms.
func TestEntryReplicas(t *testing.T) {
	needRoot(t)
	dep, topo := deployed(t, twoMachines("grpc", `latency = "1ms"`)+"[deploy.replicas]\nhop1 = 2\n")
	if n := len(dep.Processes()); n != 3 {
		t.Fatalf("%d processes, want two of hop1 and one of hop2", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const calls = 100
	r := topo.Requests()[0]
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	slow := func(how string, el time.Duration) {
		if el < 1500*time.Microsecond {
			t.Errorf("a call %s took %s over two 1 ms links", how, el)
		}
	}
	for range calls {
		start := time.Now()
		resp, err := client.Post(dep.GatewayURL()+r.Method, "application/json", bytes.NewReader(r.JSON()))
		if err != nil {
			t.Fatalf("gateway: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("gateway: %s: %s", resp.Status, body)
		}
		slow("through the gateway", time.Since(start))
	}
	conn, err := dep.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	for range calls {
		start := time.Now()
		if _, err := r.Invoke(ctx, conn); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		slow("over the client's connection", time.Since(start))
	}
	conn.Close()
	procs := dep.Processes()
	if err := dep.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.Info().Group != "hop1" {
			continue
		}
		n := -1
		for _, l := range p.Tail() {
			if m := servedRE.FindStringSubmatch(l); m != nil {
				n, _ = strconv.Atoi(m[1])
			}
		}
		if n < 90 || n > 110 {
			t.Errorf("%s served %d of %d calls, want half ± 10%%", p.Info().Name, n, 2*calls)
		}
	}
}
