package external

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// pollEvery is the gap between two readiness checks.
const pollEvery = 100 * time.Millisecond

// waitReady polls k's ready check until it passes or timeout ends, and
// then says what the last check found.
func waitReady(ctx context.Context, k *Keys, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	check := readyCheck(k)
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s is not ready after %s (deploy.start_timeout): %s: %w", k.URL, timeout, readyWhat(k), last)
		case <-time.After(pollEvery):
		}
	}
}

// readyWhat names k's check for messages.
func readyWhat(k *Keys) string {
	switch {
	case k.Ready == readyTCP:
		return "connect to " + k.hostport
	case k.protocol == protoGRPC:
		return fmt.Sprintf("grpc.health.v1 of service %q", grpcService(k.Ready))
	}
	return "GET " + k.Ready
}

// readyCheck is one check of k's ready key.
func readyCheck(k *Keys) func(context.Context) error {
	switch {
	case k.Ready == readyTCP:
		return func(ctx context.Context) error {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", k.hostport)
			if err != nil {
				return err
			}
			return c.Close()
		}
	case k.protocol == protoGRPC:
		return func(ctx context.Context) error { return grpcHealth(ctx, k.hostport, grpcService(k.Ready)) }
	}
	client := &http.Client{}
	if k.protocol == protoH2C {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		client.Transport = &http.Transport{Protocols: &p}
	}
	url := strings.TrimSuffix(k.Target(), "/") + k.Ready
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		client.CloseIdleConnections()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("answered %s", resp.Status)
		}
		return nil
	}
}

// grpcService is the service name ready asks grpc.health.v1 about: ""
// (the whole server) for "grpc".
func grpcService(ready string) string {
	if ready == readyGRPC {
		return ""
	}
	return ready
}

// grpcHealth asks grpc.health.v1 at addr whether service is serving.
func grpcHealth(ctx context.Context, addr, service string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return err
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("status %s", s)
	}
	return nil
}
