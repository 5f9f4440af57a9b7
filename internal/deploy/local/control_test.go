package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// TestControlChannel deploys chain split, starts a second host of hop3 in
// this process, and moves hop2's calls over to it through the control
// channel, without restarting hop2; then it drains and stops the first
// hop3 while calls go on.
func TestControlChannel(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"grpc", "http", "netrpc", "protorpc"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			testControlChannel(t, tr)
		})
	}
}

func testControlChannel(t *testing.T, tr string) {
	p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \""+tr+"\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := local.Deploy(ctx, p, local.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	defer d.Stop(context.Background())
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// The second hop3: the same host code, in this process, counting the
	// calls it serves.
	dir, err := os.MkdirTemp("", "svclab")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfgJSON, err := p.ConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	second := runtime.Endpoint{Transport: tr, Network: "unix", Addr: filepath.Join(dir, "hop3.sock")}
	var served atomic.Int64
	count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		served.Add(1)
		return h(ctx, req)
	}
	hostCtx, stopHost := context.WithCancel(context.Background())
	hostDone := make(chan error, 1)
	go func() {
		hostDone <- runtime.RunHost(hostCtx, &hostv1.HostConfig{
			Deployment: d.ID(), App: "chain", ConfigJson: string(cfgJSON), Transport: tr,
			Group: "hop3", Components: []string{"hop3"}, Entry: "hop1",
			Listeners: map[string]*hostv1.Listener{"hop3": {Endpoint: second.Proto()}},
		}, runtime.Middleware{Server: []grpc.UnaryServerInterceptor{count}})
	}()
	defer func() {
		stopHost()
		if err := <-hostDone; err != nil {
			t.Errorf("second hop3: %v", err)
		}
	}()
	// Its socket exists once it is built; calls queue until it serves.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(second.Addr); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("second hop3 not listening on %s after 10s", second.Addr)
		}
	}

	req := p.Requests()[0]
	calls := func(n int) {
		t.Helper()
		for range n {
			if _, err := req.Invoke(ctx, conn); err != nil {
				t.Fatalf("call: %v", err)
			}
		}
	}
	first := d.Processes()[2].Listeners()["hop3"]
	if err := d.UpdatePeers(ctx, "hop2", map[string][]runtime.Endpoint{"hop3": {first, second}}); err != nil {
		t.Fatalf("update peers: %v", err)
	}
	calls(10)
	if got := served.Load(); got != 5 {
		t.Errorf("second hop3 served %d of 10 calls over two endpoints, want 5", got)
	}
	if err := d.UpdatePeers(ctx, "hop2", map[string][]runtime.Endpoint{"hop3": {second}}); err != nil {
		t.Fatalf("update peers: %v", err)
	}
	calls(5)
	if got := served.Load(); got != 10 {
		t.Errorf("second hop3 served %d calls, want 10 (all 5 after the first left the set)", got)
	}

	err = d.UpdatePeers(ctx, "hop2", map[string][]runtime.Endpoint{"hop1": {second}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "hop1") {
		t.Errorf("update of a peer hop2 does not call: %v, want InvalidArgument naming hop1", err)
	}
	if err := d.Drain(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `no group "nope"`) {
		t.Errorf("drain of an unknown group: %v", err)
	}

	// The first hop3, out of every set, drains and stops on request.
	if err := d.Drain(ctx, "hop3"); err != nil {
		t.Errorf("drain hop3: %v", err)
	}
	pid := d.Processes()[2].Info().PID
	if err := d.StopGroup(ctx, "hop3"); err != nil {
		t.Errorf("stop hop3: %v", err)
	}
	if alive(pid) {
		t.Errorf("hop3 (pid %d) alive after StopGroup", pid)
	}
	calls(5)
	if got := served.Load(); got != 15 {
		t.Errorf("second hop3 served %d calls, want 15", got)
	}
	if err := d.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}
