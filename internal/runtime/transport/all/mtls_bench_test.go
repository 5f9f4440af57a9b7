package all_test

import (
	"crypto/tls"
	"testing"

	"github.com/svclab/svclab/internal/pki"
)

// BenchmarkMTLSRoundTrip is BenchmarkRoundTrip with deploy.mtls's TLS on
// both sides of each pair: svclab's grpc and http with a
// run's certificates from internal/pki, beside the bare library with the
// very same tls.Config (grpc-go's credentials, net/http's TLS).
// p50-ratio is what svclab adds to a
// mutual-TLS hop (docs/PERFORMANCE.md); the bound is 1.10.
func BenchmarkMTLSRoundTrip(b *testing.B) {
	server, client := mtlsConfigs(b)
	pairs := [][]peer{
		{svclabTLSPeer(b, "grpc", server, client), grpcBareTLSPeer(b, server, client)},
		{svclabTLSPeer(b, "http", server, client), httpBareTLSPeer(b, server, client)},
	}
	for _, size := range []struct {
		name string
		n    int
	}{{"100B", 100}, {"100KB", 100 << 10}} {
		p := payload(size.n)
		for _, pair := range pairs {
			b.Run(size.name+"/"+pair[0].name, func(b *testing.B) {
				measurePair(b, pair[0], pair[1], nil, p)
			})
		}
	}
}

// mtlsConfigs are the TLS configurations a deployment with deploy.mtls
// gives a server and its client.
func mtlsConfigs(tb testing.TB) (server, client *tls.Config) {
	tb.Helper()
	ca, err := pki.NewCA("bench")
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	load := func(c string) *pki.Identity {
		f, err := ca.Write(dir, c)
		if err != nil {
			tb.Fatal(err)
		}
		id, err := pki.Load(f)
		if err != nil {
			tb.Fatal(err)
		}
		return id
	}
	return pki.ServerConfig(load("echo")), pki.ClientConfig(load("caller"), "echo")
}
