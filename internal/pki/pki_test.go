package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// files issues component's credentials from ca into a new dir.
func files(t *testing.T, ca *CA, component string) Files {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ca.Run())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := ca.Write(dir, component)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func load(t *testing.T, f Files) *Identity {
	t.Helper()
	id, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func newCA(t *testing.T, run string) *CA {
	t.Helper()
	ca, err := NewCA(run)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestIssue(t *testing.T) {
	ca := newCA(t, "r1")
	f := files(t, ca, "cart")
	for _, p := range []string{f.Cert, f.Key, f.CA} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, st.Mode().Perm())
		}
	}
	// The CA's key is never written.
	entries, _ := os.ReadDir(filepath.Dir(f.CA))
	if len(entries) != 3 {
		t.Errorf("dir holds %d files, want cert, key and CA", len(entries))
	}
	id := load(t, f)
	if got, want := id.ID.String(), "spiffe://svclab/r1/cart"; got != want {
		t.Errorf("ID %s, want %s", got, want)
	}
	if id.Run != "r1" {
		t.Errorf("run %q", id.Run)
	}
	leaf := id.Cert.Leaf
	if leaf.PublicKeyAlgorithm != x509.ECDSA || leaf.SignatureAlgorithm != x509.ECDSAWithSHA256 {
		t.Errorf("leaf is %v signed %v, want ECDSA P-256", leaf.PublicKeyAlgorithm, leaf.SignatureAlgorithm)
	}
	if !ca.Certificate().IsCA || !ca.Certificate().MaxPathLenZero {
		t.Error("CA certificate cannot sign leaves only")
	}
	caPEM, _ := os.ReadFile(f.CA)
	if b, _ := pem.Decode(caPEM); b == nil || b.Type != "CERTIFICATE" || strings.Contains(string(caPEM), "PRIVATE") {
		t.Errorf("CA file is not a lone certificate:\n%s", caPEM)
	}
}

func TestBadNames(t *testing.T) {
	for _, run := range []string{"", "a/b", "..", "a b"} {
		if _, err := NewCA(run); err == nil {
			t.Errorf("NewCA(%q) succeeded", run)
		}
	}
	ca := newCA(t, "r")
	if _, err := ca.Issue("x/y"); err == nil {
		t.Error("Issue(x/y) succeeded")
	}
}

func TestLoadRefusesForeignLeaf(t *testing.T) {
	a, b := newCA(t, "a"), newCA(t, "b")
	fa, fb := files(t, a, "x"), files(t, b, "x")
	if _, err := Load(Files{Cert: fa.Cert, Key: fa.Key, CA: fb.CA}); err == nil {
		t.Error("Load accepted a leaf of another CA")
	}
}

// serve runs a TLS echo server with cfg on loopback; each accepted
// connection's handshake error (or nil) is sent on the returned channel.
func serve(t *testing.T, cfg *tls.Config) (string, <-chan error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	done := make(chan struct{})
	t.Cleanup(func() { lis.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(c, cfg)
			_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
			err = tc.Handshake()
			errs <- err
			if err == nil {
				_, _ = io.Copy(tc, io.LimitReader(tc, 5))
			}
			tc.Close()
		}
	}()
	return lis.Addr().String(), errs
}

// call dials addr with cfg, sends "hello" and reads the echo.
func call(addr string, cfg *tls.Config) error {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("hello")); err != nil {
		return err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if string(b) != "hello" {
		return errors.New("echo was " + string(b))
	}
	return nil
}

func TestHandshakes(t *testing.T) {
	ca := newCA(t, "run1")
	server := load(t, files(t, ca, "cart"))
	client := load(t, files(t, ca, "frontend"))
	addr, serverErrs := serve(t, ServerConfig(server))

	other := newCA(t, "run1") // same run name, another CA
	stranger := load(t, files(t, other, "frontend"))

	noCert := ClientConfig(client, "cart")
	noCert.Certificates = nil
	tls12 := ClientConfig(client, "cart")
	tls12.MaxVersion = tls.VersionTLS12

	tests := []struct {
		name   string
		cfg    *tls.Config
		ok     bool
		server bool // the server refuses (rather than the client)
	}{
		{"same run", ClientConfig(client, "cart"), true, false},
		{"wrong server identity", ClientConfig(client, "catalog"), false, false},
		{"no client certificate", noCert, false, true},
		{"client of another CA", ClientConfig(stranger, "cart"), false, true},
		{"TLS 1.2 client", tls12, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(addr, tc.cfg)
			serr := <-serverErrs
			if tc.ok {
				if err != nil || serr != nil {
					t.Fatalf("client: %v; server: %v", err, serr)
				}
				return
			}
			if err == nil {
				t.Fatal("the call succeeded")
			}
			if tc.server && serr == nil {
				t.Errorf("the server accepted the handshake (client saw %v)", err)
			}
		})
	}

}

func TestServerChecksRun(t *testing.T) {
	// One CA that (wrongly) issued for two runs: the server of run a
	// refuses a client naming run b, whose chain is otherwise valid.
	ca := newCA(t, "a")
	server := load(t, files(t, ca, "cart"))
	foreign := *ca
	foreign.run = "b"
	client := load(t, files(t, &foreign, "frontend"))
	client.Run = "a" // so that it expects the server of run a
	addr, serverErrs := serve(t, ServerConfig(server))
	if err := call(addr, ClientConfig(client, "cart")); err == nil {
		t.Fatal("a client of another run got through")
	}
	if err := <-serverErrs; err == nil || !strings.Contains(err.Error(), "run b") {
		t.Errorf("server error %v, want one naming run b", err)
	}
}

// TestOpenSSLClient checks the server with a TLS client that is not Go's:
// openssl s_client gets through with the run's certificate and is refused
// at the handshake without one.
func TestOpenSSLClient(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed (Debian package openssl)")
	}
	ca := newCA(t, "r")
	addr, serverErrs := serve(t, ServerConfig(load(t, files(t, ca, "cart"))))
	cf := files(t, ca, "frontend")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(openssl, append([]string{"s_client", "-connect", addr, "-tls1_3", "-CAfile", cf.CA, "-verify_return_error", "-quiet"}, args...)...)
		cmd.Stdin = strings.NewReader("hello")
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("-cert", cf.Cert, "-key", cf.Key)
	if serr := <-serverErrs; err != nil || serr != nil || !strings.Contains(out, "hello") {
		t.Errorf("with a certificate: openssl %v, server %v, output:\n%s", err, serr, out)
	}
	out, _ = run()
	if serr := <-serverErrs; serr == nil || strings.Contains(out, "hello") {
		t.Errorf("without a certificate the server accepted; output:\n%s", out)
	}
}
