package netconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDialServerName dials a TLS server whose certificate is for
// 127.0.0.1 and example.com (net/http/httptest's), with and without a
// ServerName in the client's config.
func TestDialServerName(t *testing.T) {
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	hs.Close() // only its certificate is wanted
	pool := x509.NewCertPool()
	pool.AddCert(hs.Certificate())
	serverCfg := &tls.Config{Certificates: hs.TLS.Certificates}

	dir, err := os.MkdirTemp("", "netconn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, tc := range []struct {
		name, network, serverName string
		wantErr                   string // "" for success
	}{
		{"tcp, host from the address", "tcp", "", ""},
		{"unix, localhost", "unix", "", "localhost"}, // the certificate is not for localhost
		{"unix, named", "unix", "example.com", ""},
		{"tcp, wrong name", "tcp", "other.test", "other.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lis net.Listener
			var err error
			if tc.network == "unix" {
				lis, err = net.Listen("unix", filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "")+".sock"))
			} else {
				lis, err = net.Listen("tcp", "127.0.0.1:0")
			}
			if err != nil {
				t.Fatal(err)
			}
			var a Acceptor
			served := make(chan error, 1)
			go func() {
				served <- a.Serve(lis, serverCfg, func(c net.Conn) {
					defer c.Close()
					io.Copy(c, c)
				})
			}()
			defer func() {
				a.Stop()
				if err := <-served; err != nil {
					t.Errorf("Serve after Stop: %v", err)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := Dial(ctx, nil, tc.network, lis.Addr().String(), &tls.Config{RootCAs: pool, ServerName: tc.serverName})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
				t.Fatalf("echo: %q, %v", buf, err)
			}
		})
	}
}

// TestAcceptorStop checks that Stop closes the connections being served
// and ends Serve with nil, and that a Serve after Stop returns at once.
func TestAcceptorStop(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var a Acceptor
	started, ended := make(chan struct{}), make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- a.Serve(lis, nil, func(c net.Conn) {
			close(started)
			io.Copy(io.Discard, c) // returns once Stop closes c
			close(ended)
		})
	}()
	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-started
	a.Stop()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the connection being served was not closed by Stop")
	}
	if err := <-served; err != nil {
		t.Errorf("Serve returned %v after Stop, want nil", err)
	}
	lis2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Serve(lis2, nil, func(net.Conn) {}); err != nil {
		t.Errorf("Serve after Stop: %v, want nil", err)
	}
	if _, err := lis2.Accept(); err == nil {
		t.Error("Serve after Stop left its listener open")
	}
}
