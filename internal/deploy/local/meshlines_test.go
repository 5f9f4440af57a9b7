package local_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// TestMeshLines: what `svclab up` says of a deployment's mesh matches what
// runs: behind sidecars the entry is the proxy and mTLS is the proxies',
// and the sampling ratio reads as a share.
func TestMeshLines(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(deploy.JaegerPath()); err != nil {
		t.Skipf("Jaeger %s is not built (make jaeger): %v", deploy.JaegerVersion, err)
	}
	proxyOrSkip(t, spec.SidecarEnvoy)
	for _, tc := range []struct {
		name, deploy string
		want, not    []string
	}{
		{"proxyless", "mtls = true\ntracing = 0.25\n",
			[]string{"mtls:    every listener but the gateway; a client certificate: --cacert ", "tracing: 25% of requests, Jaeger UI at http://127.0.0.1:"},
			[]string{"proxies:"}},
		{"sidecars", "sidecar = \"envoy\"\nmtls = true\n",
			[]string{"proxies: the entry above is hop1's proxy", "mtls:    between the proxies and at the entry"},
			[]string{"tracing:"}},
		{"sidecars alone", "sidecar = \"envoy\"\n", []string{"proxies: "}, []string{"mtls:", "tracing:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\nhops = 2\n[deploy]\nplacement = \"split\"\n"+tc.deploy)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			d, err := localDeployer(t).Deploy(ctx, p, deploy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Stop(context.Background())
			lines := strings.Join(d.Capabilities().Mesh.MeshLines(), "\n")
			for _, w := range tc.want {
				if !strings.Contains(lines, w) {
					t.Errorf("lines lack %q:\n%s", w, lines)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(lines, n) {
					t.Errorf("lines have %q:\n%s", n, lines)
				}
			}
		})
	}
}
