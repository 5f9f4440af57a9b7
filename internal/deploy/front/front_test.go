package front

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcServer serves grpc.health.v1 on a loopback port, answering status
// for the whole server.
func grpcServer(t *testing.T, status healthpb.HealthCheckResponse_ServingStatus) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := health.NewServer()
	h.SetServingStatus("", status)
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, h)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// TestHTTPSpreadsGRPCCalls: a gRPC client, which multiplexes every call
// over one HTTP/2 connection, reaches both replicas through the front,
// alternately, as the front balances per request over h2c upstreams; and
// a replica taken out by Update gets no more calls.
func TestHTTPSpreadsGRPCCalls(t *testing.T) {
	up := grpcServer(t, healthpb.HealthCheckResponse_SERVING)
	down := grpcServer(t, healthpb.HealthCheckResponse_NOT_SERVING)
	f, err := StartHTTP([]string{up, down}, (&net.Dialer{Timeout: time.Second}).DialContext, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cc, err := grpc.NewClient(f.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)
	count := func(n int) map[healthpb.HealthCheckResponse_ServingStatus]int {
		out := map[healthpb.HealthCheckResponse_ServingStatus]int{}
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			out[resp.GetStatus()]++
		}
		return out
	}
	if got := count(10); got[healthpb.HealthCheckResponse_SERVING] != 5 || got[healthpb.HealthCheckResponse_NOT_SERVING] != 5 {
		t.Errorf("10 calls over one connection reached the replicas %v times, want 5 each", got)
	}
	f.Update([]string{up})
	if got := count(6); got[healthpb.HealthCheckResponse_SERVING] != 6 {
		t.Errorf("after Update to one replica: %v", got)
	}
}

// TestTCPSpreadsConnections: each connection through a TCP front meets
// the next replica, and its bytes go both ways.
func TestTCPSpreadsConnections(t *testing.T) {
	var addrs []string
	for _, name := range []string{"a", "b"} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lis.Close() })
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 4)
				if _, err := c.Read(buf); err == nil {
					_, _ = c.Write(append([]byte(name), buf...))
				}
				c.Close()
			}
		}()
		addrs = append(addrs, lis.Addr().String())
	}
	f, err := StartTCP(addrs, (&net.Dialer{Timeout: time.Second}).DialContext)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]int{}
	for range 4 {
		c, err := net.Dial("tcp", f.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("ping"))
		buf := make([]byte, 5)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := c.Read(buf)
		c.Close()
		seen[string(buf[:n])]++
	}
	if seen["aping"] != 2 || seen["bping"] != 2 {
		t.Errorf("4 connections answered %v, want each replica twice", seen)
	}
}
