package sidecar

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	_ "github.com/svclab/svclab/apps/chain"
	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
)

// TestMutualTLSBetweenProxies runs each proxy program for a two-hop chain
// with mutual TLS between the proxies (certificates from internal/pki) in
// front of a real gRPC server, and checks that a call through hop1's
// outbound listener reaches hop2 over TLS, that the run's client identity
// is let in, and that a client with no certificate, one from another CA,
// or no TLS at all is refused at hop2's inbound listener.
func TestMutualTLSBetweenProxies(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			k, _ := Lookup(name)
			bin := binaryOrSkip(t, k)
			testMutualTLS(t, k, bin)
		})
	}
}

// TestEnvoyChecksCalleeIdentity gives hop1's Envoy the wrong SPIFFE ID
// for hop2: though hop2's certificate chains to the run's CA, the call is
// refused, as Envoy matches the URI SAN (nginx and HAProxy cannot).
func TestEnvoyChecksCalleeIdentity(t *testing.T) {
	k, _ := Lookup("envoy")
	bin := binaryOrSkip(t, k)
	layout, files, _ := securedLayout(t, k, func(c string) string { return pki.ID("run1", "hop3").String() })
	for _, px := range layout.Proxies {
		startProxy(t, k, bin, px.Config)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// hop2's Envoy is up: it answers the run's client...
	id, err := pki.Load(files["svclab.client"])
	if err != nil {
		t.Fatal(err)
	}
	if err := waitServing(ctx, layout.Inbound["hop2"][0], credentials.NewTLS(pki.ClientConfig(id, "hop2"))); err != nil {
		t.Fatalf("hop2's inbound listener: %v", err)
	}
	// ...and hop1's accepts connections...
	out := layout.Peers[0][0]["hop2"]
	for {
		c, err := net.Dial("tcp", out)
		if err == nil {
			c.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("hop1's outbound listener never listened: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// ...but will not hand a call to a hop2 that is not hop3.
	if err := check(ctx, out, insecure.NewCredentials()); err == nil {
		t.Fatal("hop1's Envoy called a hop2 whose certificate names hop2, though it was told to expect hop3")
	}
}

func testMutualTLS(t *testing.T, k Kind, bin string) {
	layout, files, ca := securedLayout(t, k, func(c string) string { return pki.ID("run1", c).String() })
	for _, px := range layout.Proxies {
		startProxy(t, k, bin, px.Config)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// hop1's app calls hop2 through its own proxy, in plaintext; the
	// proxies speak mutual TLS to each other.
	if err := waitServing(ctx, layout.Peers[0][0]["hop2"], insecure.NewCredentials()); err != nil {
		t.Fatalf("hop1 → hop2 through the proxies: %v", err)
	}
	in := layout.Inbound["hop2"][0]
	id, err := pki.Load(files["svclab.client"])
	if err != nil {
		t.Fatal(err)
	}
	if err := check(ctx, in, credentials.NewTLS(pki.ClientConfig(id, "hop2"))); err != nil {
		t.Errorf("the run's client identity at hop2's inbound listener: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	other, _ := pki.NewCA("other")
	otherFiles, _ := other.Write(t.TempDir(), "hop1")
	otherCert, err := tls.LoadX509KeyPair(otherFiles.Cert, otherFiles.Key)
	if err != nil {
		t.Fatal(err)
	}
	for what, creds := range map[string]credentials.TransportCredentials{
		"no client certificate":  credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS13}),
		"another CA's client":    credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{otherCert}}),
		"a plaintext HTTP/2 one": insecure.NewCredentials(),
	} {
		if err := check(ctx, in, creds); err == nil {
			t.Errorf("%s was let in at hop2's inbound listener", what)
		}
	}
}

// securedLayout lays out a two-hop chain's proxies of kind k in front of a
// gRPC health server, with mutual TLS from a fresh CA for run "run1"; the
// outbound listeners expect the callee identity peerID gives.
func securedLayout(t *testing.T, k Kind, peerID func(string) string) (*Layout, map[string]pki.Files, *pki.CA) {
	t.Helper()
	s, err := spec.Parse("x.toml", []byte(fmt.Sprintf("[app]\nname = \"chain\"\nhops = 2\n[deploy]\nplacement = \"split\"\nsidecar = %q\n", k.Name())))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := runtime.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	app := startHealthServer(t)
	root := t.TempDir()
	layout, err := NewLayout(topo, func(int, string) []string { return []string{app} }, freePort, func(n string) (string, error) {
		d := filepath.Join(root, n)
		return d, os.Mkdir(d, 0o700)
	})
	if err != nil {
		t.Fatal(err)
	}
	const run = "run1"
	ca, err := pki.NewCA(run)
	if err != nil {
		t.Fatal(err)
	}
	pkiDir := filepath.Join(root, "pki")
	if err := os.Mkdir(pkiDir, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]pki.Files{}
	for _, c := range []string{"hop1", "hop2", "svclab.client"} {
		if files[c], err = ca.Write(pkiDir, c); err != nil {
			t.Fatal(err)
		}
	}
	prefix := strings.TrimSuffix(pki.ID(run, "x").String(), "x")
	err = layout.Secure(topo, func(c string) (string, string, string) { f := files[c]; return f.CA, f.Cert, f.Key },
		prefix, peerID)
	if err != nil {
		t.Fatal(err)
	}
	return layout, files, ca
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startHealthServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

func startProxy(t *testing.T, k Kind, bin string, c Config) {
	t.Helper()
	startProxyGroup(t, k, bin, c)
}

// check calls the health service at addr once.
func check(ctx context.Context, addr string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("status %s", resp.GetStatus())
	}
	return nil
}

// waitServing retries check until the proxies are up or ctx ends.
func waitServing(ctx context.Context, addr string, creds credentials.TransportCredentials) error {
	for {
		err := check(ctx, addr, creds)
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
