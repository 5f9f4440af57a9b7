package load

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/proto/echo"
)

// TestGRPCOverMutualTLS loads a gRPC server that demands a client
// certificate from its CA, as a deploy.mtls entry does: with the CA and a
// client certificate every call is answered; with the CA alone, or in
// plaintext, none is.
func TestGRPCOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewCA("loadtest")
	if err != nil {
		t.Fatal(err)
	}
	srvFiles, err := ca.Write(dir, "echo")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Write(dir, "svclab.client")
	if err != nil {
		t.Fatal(err)
	}
	id, err := pki.Load(srvFiles)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(pki.ServerConfig(id))))
	echo.RegisterEchoServer(s, echo.Service{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)

	for _, tc := range []struct {
		name   string
		target string
		tls    *TLS
		ok     bool
	}{
		{"mutual TLS", lis.Addr().String(), &TLS{CA: client.CA, Cert: client.Cert, Key: client.Key}, true},
		{"as svclab up prints the entry", "grpc+tcp://" + lis.Addr().String(), &TLS{CA: client.CA, Cert: client.Cert, Key: client.Key}, true},
		{"no client certificate", lis.Addr().String(), &TLS{CA: client.CA}, false},
		{"plaintext", lis.Addr().String(), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Target: tc.target, Protocol: GRPC, TLS: tc.tls, Rate: 50, Duration: Duration(500 * time.Millisecond),
				Timeout: Duration(time.Second), Request: &Request{Method: "svclab.echo.Echo/Echo", Body: `{"payload": "aGk="}`}}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			tot := mustOp(t, run(t, cfg, Options{}), "total")
			if tot.Count < 20 {
				t.Fatalf("only %d requests", tot.Count)
			}
			if tc.ok && tot.Errors != 0 || !tc.ok && tot.Errors != tot.Count {
				t.Errorf("%d of %d requests failed (%v)", tot.Errors, tot.Count, tot.ErrorsByClass)
			}
		})
	}
}

// TestTLSBadInput: what [load.tls] gets wrong is one error at its key,
// before anything is dialled.
func TestTLSBadInput(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		protocol Protocol
		tls      TLS
		key, msg string
	}{
		{"cert without key", GRPC, TLS{Cert: notPEM}, "load.tls.key", "needs its key"},
		{"key without cert", GRPC, TLS{Key: notPEM}, "load.tls.cert", "needs its certificate"},
		{"no such CA", GRPC, TLS{CA: filepath.Join(dir, "none.pem")}, "load.tls.ca", "no such file"},
		{"CA not PEM", GRPC, TLS{CA: notPEM}, "load.tls.ca", "holds no PEM certificate"},
		{"cert not PEM", GRPC, TLS{Cert: notPEM, Key: notPEM}, "load.tls.cert", "client certificate"},
		{"no such key", GRPC, TLS{Cert: notPEM, Key: filepath.Join(dir, "none.key")}, "load.tls.key", "no such file"},
		{"over http", HTTP, TLS{CA: notPEM}, "load.tls.ca", "TLS is for protocol \"grpc\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := "127.0.0.1:1"
			if tc.protocol == HTTP {
				target = "http://127.0.0.1:1/"
			}
			tl := tc.tls
			cfg := Config{Target: target, Protocol: tc.protocol, TLS: &tl, Rate: 1, Request: &Request{Method: "svclab.echo.Echo/Echo", Body: "{}"}}
			if tc.protocol == HTTP {
				cfg.Request = nil
			}
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %v, want an error at %s saying %q", err, tc.key, tc.msg)
			}
		})
	}
}
