package netns_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
)

// TestHopFaultSameMachine cuts the hop from hop1 to hop2, two groups on one
// machine (a path that has no proxy without faults): calls hang while the
// cut lasts and succeed again after it; the hop from hop2 to hop3 on
// another machine, which no fault targets, is not touched.
func TestHopFaultSameMachine(t *testing.T) {
	needRoot(t)
	dep, topo := deployed(t, `[app]
name = "chain"
hops = 3
[deploy]
deployer = "netns"
placement = "split"
[deploy.hosts.vm1]
groups = ["hop1", "hop2"]
[deploy.hosts.vm2]
groups = ["hop3"]
[deploy.faults.link_cut]
target = "hop2"
duration = "1s"
`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := dep.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := topo.Requests()[0]
	call := func(d time.Duration) error {
		cctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		_, err := r.Invoke(cctx, conn)
		return err
	}
	if err := call(5 * time.Second); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	stop, err := dep.Capabilities().HopFaults.StartFault(topo.Faults[0])
	if err != nil {
		t.Fatalf("start fault: %v", err)
	}
	for range 3 {
		if err := call(300 * time.Millisecond); status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("during the cut: %v, want the caller's deadline", err)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("stop fault: %v", err)
	}
	// The cut's end closes the connections it held; the caller reconnects.
	var last error
	for range 50 {
		if last = call(time.Second); last == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Errorf("after the cut: %v", last)
	}
}
