// Package probe checks that a server is ready, over what it speaks: a GET
// of an HTTP path that must answer 2xx (over HTTP/1.1 or h2c), gRPC's
// grpc.health.v1, or a TCP connect. The external deployer asks it about
// a system that already runs, the exec app's programs about each program
// it starts.
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Checks other than an HTTP path.
const (
	// TCP waits for a connect.
	TCP = "tcp"
	// GRPC asks grpc.health.v1 about the whole server; any other string
	// that is not a path is a service name for it.
	GRPC = "grpc"
)

// Protocols a Probe speaks.
const (
	ProtoHTTP = "http"
	ProtoH2C  = "h2c"
	ProtoGRPC = "grpc"
)

// PollEvery is the gap between two checks in Wait.
const PollEvery = 100 * time.Millisecond

// Probe is one server's readiness check.
type Probe struct {
	// Protocol is what the server speaks: ProtoHTTP, ProtoH2C or
	// ProtoGRPC; any other value allows TCP alone.
	Protocol string
	// Addr is the server's host:port, or its unix socket's path.
	Addr string
	// Network is Addr's: "tcp" (when empty) or "unix".
	Network string
	// Dial opens the probe's connections; default a net.Dialer's, from
	// this process's network namespace.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Check is an HTTP path (on URL), GRPC or a gRPC service name, or
	// TCP.
	Check string
	// URL is the base of an HTTP path; default "http://" + Addr.
	URL string
}

// network is Network, its default filled.
func (p Probe) network() string {
	if p.Network == "" {
		return "tcp"
	}
	return p.Network
}

// ownDial reports whether the probe's clients must dial through dial: a
// unix socket, or a Dial of the caller's.
func (p Probe) ownDial() bool { return p.Dial != nil || p.network() == "unix" }

// dial connects to the server, whatever address a client names.
func (p Probe) dial(ctx context.Context) (net.Conn, error) {
	if p.Dial != nil {
		return p.Dial(ctx, p.network(), p.Addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, p.network(), p.Addr)
}

// String names the check for messages: "GET /healthz", "connect to
// 127.0.0.1:80".
func (p Probe) String() string {
	switch {
	case p.Check == TCP:
		return "connect to " + p.Addr
	case p.Protocol == ProtoGRPC:
		return fmt.Sprintf("grpc.health.v1 of service %q", p.service())
	}
	return "GET " + p.Check
}

// service is the service name Check asks grpc.health.v1 about: "" (the
// whole server) for GRPC.
func (p Probe) service() string {
	if p.Check == GRPC {
		return ""
	}
	return p.Check
}

// Func returns one check of p, for calling again and again.
func (p Probe) Func() func(context.Context) error {
	switch {
	case p.Check == TCP:
		return func(ctx context.Context) error {
			c, err := p.dial(ctx)
			if err != nil {
				return err
			}
			return c.Close()
		}
	case p.Protocol == ProtoGRPC:
		return func(ctx context.Context) error { return grpcHealth(ctx, p, p.service()) }
	}
	client := &http.Client{}
	if p.Protocol == ProtoH2C || p.ownDial() {
		tr := &http.Transport{}
		if p.Protocol == ProtoH2C {
			var ps http.Protocols
			ps.SetUnencryptedHTTP2(true)
			tr.Protocols = &ps
		}
		if p.ownDial() {
			tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return p.dial(ctx) }
		}
		client.Transport = tr
	}
	base := p.URL
	switch {
	case base != "":
	case p.network() == "unix":
		base = "http://localhost" // the socket is dialled whatever the host
	default:
		base = "http://" + p.Addr
	}
	url := strings.TrimSuffix(base, "/") + p.Check
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

// Wait checks p every PollEvery, each check bounded by a second, until one
// passes (nil) or ctx ends: then it returns the last check's error, or
// ctx's when none ran.
func (p Probe) Wait(ctx context.Context) error {
	check := p.Func()
	// The last answer says why, not a check that time cut: one cut says
	// only that time ran out (under load, a check begun just before the
	// deadline ended in "context deadline exceeded" where every earlier
	// one had been answered 500, and a starved check of a missing socket
	// said "i/o timeout" where the next said "no such file").
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := check(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil && (!timedOut(err) || timedOut(last)) {
			last = err
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(PollEvery):
		}
	}
}

// timedOut says whether err says only that a check ran out of time.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded ||
		errors.As(err, &ne) && ne.Timeout()
}

// grpcHealth asks grpc.health.v1 at p's server whether service is
// serving.
func grpcHealth(ctx context.Context, p Probe, service string) error {
	target, opts := p.Addr, []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if p.ownDial() {
		target = "passthrough:///localhost" // the dialer goes to p.Addr
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return p.dial(ctx) }))
	}
	conn, err := grpc.NewClient(target, opts...)
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
