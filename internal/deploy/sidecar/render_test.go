package sidecar

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// binaryOrSkip returns k's program, or skips the test saying how to get it.
func binaryOrSkip(t *testing.T, k Kind) string {
	t.Helper()
	bin, err := k.Binary()
	if err != nil {
		t.Skipf("%s is not installed: %v", k.Name(), err)
	}
	return bin
}

// TestRenderAccepted renders every kind's configuration for every
// protocol and has the real program check it.
func TestRenderAccepted(t *testing.T) {
	for _, name := range Names() {
		k, _ := Lookup(name)
		for _, proto := range []Protocol{HTTP1, HTTP2, TCP} {
			for _, withTLS := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/tls=%t", name, proto, withTLS), func(t *testing.T) {
					testRender(t, k, proto, withTLS)
				})
			}
		}
	}
}

func testRender(t *testing.T, k Kind, proto Protocol, withTLS bool) {
	name := k.Name()
	bin := binaryOrSkip(t, k)
	dir := t.TempDir()
	c := Config{Name: "hop1." + name, Protocol: proto, Dir: dir, Threads: 2, Listeners: []Listener{
		{Name: "in_hop1", Port: 41001, Upstreams: []string{"127.0.0.1:41002"}, Inbound: true, Component: "hop1"},
		// Two replicas of hop2, balanced.
		{Name: "out_0_hop2", Port: 41003, Upstreams: []string{"127.0.0.1:41004", "127.0.0.1:41006"}, Component: "hop2"},
	}}
	if withTLS {
		ca, cert, key := writeTestPKI(t, dir)
		in, err := NewTLS(dir, ca, cert, key, "spiffe://svclab/run/", true)
		if err != nil {
			t.Fatal(err)
		}
		out := *in
		out.Peer, out.PeerPrefix = "spiffe://svclab/run/hop2", false
		c.Listeners[0].TLS, c.Listeners[1].TLS = in, &out
	}
	if withTLS && proto != TCP {
		// Tracing too: Envoy emits spans over OTLP; the others ignore it.
		// As for programs: spans under the component's service, tagged
		// with the listeners' components.
		c.Tracing = &Tracing{OTLP: "127.0.0.1:41005", Ratio: 0.5, Service: "hop1", Components: true}
	}
	if withTLS {
		c.Admin = 41007 // the admin API, for deploy.metrics
	}
	path, err := Write(k, c)
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A Dynamic kind's upstreams are in the files beside the
	// configuration, which Write wrote too.
	all := slices.Clone(text)
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && p != path && filepath.Ext(p) == ".json" {
			b, _ := os.ReadFile(p)
			all = append(all, b...)
		}
		return nil
	})
	for _, want := range []string{"41001", "41002", "41003", "41004", "41006"} {
		if !strings.Contains(string(all), want) {
			t.Errorf("configuration lacks %s:\n%s", want, all)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, k.CheckArgs(path, c)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s rejects its configuration: %v\n%s\nconfiguration:\n%s", name, err, out, text)
	}
	if withTLS && !strings.Contains(string(text), "TLS") && !strings.Contains(string(text), "ssl") {
		t.Errorf("configuration with TLS names no TLS:\n%s", text)
	}
	if name == "envoy" && c.Tracing != nil && !strings.Contains(string(text), "41005") {
		t.Errorf("Envoy's configuration with tracing has no OTLP collector:\n%s", text)
	}
	if name == "envoy" && c.Tracing != nil && (!strings.Contains(string(text), `"tag": "svclab.component"`) || !strings.Contains(string(text), `"tag": "svclab.peer"`)) {
		t.Errorf("Envoy's configuration with Tracing.Components tags no component:\n%s", text)
	}
	if name == "envoy" && c.Admin != 0 && !strings.Contains(string(text), "41007") {
		t.Errorf("Envoy's configuration with Admin has no admin listener:\n%s", text)
	}
}

// writeTestPKI writes a CA and one leaf (a SPIFFE URI SAN and localhost)
// into dir, as internal/pki does for a run.
func writeTestPKI(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	id, _ := url.Parse("spiffe://svclab/run/hop1")
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hop1"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		URIs: []*url.URL{id}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	parent, _ := x509.ParseCertificate(caDER)
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, parent, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(leafKey)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("hop1.pem", "CERTIFICATE", leafDER), write("hop1.key", "PRIVATE KEY", keyDER)
}

func TestProtocolOf(t *testing.T) {
	for tr, want := range map[string]Protocol{"grpc": HTTP2, "http": HTTP1, "netrpc": TCP, "protorpc": TCP} {
		if got, err := ProtocolOf(tr); err != nil || got != want {
			t.Errorf("ProtocolOf(%q) = %q, %v; want %q", tr, got, err, want)
		}
	}
	if _, err := ProtocolOf("inproc"); err == nil {
		t.Error("ProtocolOf(inproc) succeeded")
	}
}

// TestEnvoySampling: with tracing below 1, only an inbound listener
// samples at the ratio; an outbound one traces every call, so that the
// app's decision in the traceparent is the one kept (TestEnvoySpansJaeger
// checks whole traces in a real Envoy and Jaeger).
func TestEnvoySampling(t *testing.T) {
	c := Config{Name: "hop1.envoy", Protocol: HTTP2, Tracing: &Tracing{OTLP: "127.0.0.1:41005", Ratio: 0.25}, Listeners: []Listener{
		{Name: "in_hop1", Port: 41001, Upstreams: []string{"127.0.0.1:41002"}, Inbound: true, Component: "hop1"},
		{Name: "out_0_hop2", Port: 41003, Upstreams: []string{"127.0.0.1:41004"}, Component: "hop2"},
	}}
	text, err := envoy{}.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		StaticResources struct {
			Listeners []struct {
				Name         string `json:"name"`
				FilterChains []struct {
					Filters []struct {
						TypedConfig struct {
							Tracing struct {
								RandomSampling struct {
									Value float64 `json:"value"`
								} `json:"random_sampling"`
							} `json:"tracing"`
						} `json:"typed_config"`
					} `json:"filters"`
				} `json:"filter_chains"`
			} `json:"listeners"`
		} `json:"static_resources"`
	}
	if err := json.Unmarshal(text, &conf); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	got := map[string]float64{}
	for _, l := range conf.StaticResources.Listeners {
		got[l.Name] = l.FilterChains[0].Filters[0].TypedConfig.Tracing.RandomSampling.Value
	}
	if want := map[string]float64{"in_hop1": 25, "out_0_hop2": 100}; !maps.Equal(got, want) {
		t.Errorf("random_sampling by listener = %v, want %v", got, want)
	}
}
