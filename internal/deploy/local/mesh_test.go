package local_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/apps/chain"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/hostmesh"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	chainpb "github.com/svclab/svclab/proto/chain"
)

// TestMTLS deploys a three-hop chain, one process per hop, with
// deploy.mtls on every cross-process transport, and checks that calls with
// the run's certificates work end to end (answers, large payloads,
// deadlines), while a plaintext client, a client without a certificate
// and one with a certificate of another CA are refused, by svclab's own
// clients and by openssl s_client and curl.
func TestMTLS(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"grpc", "http", "netrpc", "protorpc"} {
		t.Run(tr, func(t *testing.T) { testMTLS(t, tr, "none") })
	}
}

// testMTLS deploys a 3-hop chain with deploy.mtls over transport tr, the
// hosts doing TLS themselves (sidecar "none") or their sidecars doing it
// between each other.
func testMTLS(t *testing.T, tr, sidecar string) {
	p := resolve(t, fmt.Sprintf("[app]\nname = \"chain\"\nhops = 3\n[deploy]\ntransport = %q\nplacement = \"split\"\nmtls = true\nsidecar = %q\n", tr, sidecar))
	if !p.Mesh.MTLS {
		t.Fatal("deploy.mtls = true did not reach the topology")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := local.Deploy(ctx, p, local.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = d.Stop(context.Background())
		}
	}()
	files, ok := d.ClientFiles()
	if !ok {
		t.Fatal("no client credentials with deploy.mtls")
	}
	for _, f := range []string{files.Cert, files.Key, files.CA} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want a 0600 file", f, err, st.Mode().Perm())
		}
	}

	// The run's client: every hop's answer, a large payload, a deadline.
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatalf("dial entry: %v", err)
	}
	defer conn.Close()
	for _, r := range p.Requests() {
		if _, err := r.Invoke(ctx, conn); err != nil {
			t.Errorf("%s over mTLS: %v", r.Name, err)
		}
	}
	big := runtime.Request{
		Name: "large", Method: chainpb.Hop_Call_FullMethodName,
		Message:     &chainpb.CallRequest{Payload: chain.Large},
		NewResponse: func() proto.Message { return new(chainpb.CallResponse) },
	}
	if resp, err := big.Invoke(ctx, conn); err != nil {
		t.Errorf("large payload over mTLS: %v", err)
	} else if got, want := resp.(*chainpb.CallResponse).GetText(), chain.Expected(3, chain.Large); got != want {
		t.Errorf("large payload: %d characters, want %d", len(got), len(want))
	}
	checkDeadline(t, d, "chain", conn)
	// The gateway stays plaintext HTTP.
	for _, r := range p.Requests() {
		if err := postGateway(ctx, d.GatewayURL(), r); err != nil {
			t.Errorf("%s through the gateway: %v", r.Name, err)
		}
	}

	// Refused by svclab's own clients: plaintext, and a certificate of
	// another CA (the client trusts the run's CA, so only the server can
	// be the one refusing).
	req := p.Requests()[0]
	refused := func(what string, opts transport.DialOptions) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := deploy.DialEndpoint(cctx, d.Entry(), opts)
		if err == nil {
			defer c.Close()
			_, err = req.Invoke(cctx, c)
		}
		if err == nil {
			t.Errorf("%s got an answer from an mTLS server", what)
		}
	}
	refused("a plaintext client", transport.DialOptions{})
	run, err := pki.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA(d.ID())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	of, err := other.Write(dir, hostmesh.ClientIdentity)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := pki.Load(of)
	if err != nil {
		t.Fatal(err)
	}
	stranger.Roots = run.Roots
	refused("a client with another CA's certificate", transport.DialOptions{TLS: pki.ClientConfig(stranger, p.Entry)})
	noCert := pki.ClientConfig(run, p.Entry)
	noCert.Certificates, noCert.GetClientCertificate = nil, nil
	refused("a client with no certificate", transport.DialOptions{TLS: noCert})

	if d.Entry().Network == "tcp" {
		// nginx completes the handshake without a client certificate and
		// refuses the request instead (HTTP 400, or a closed stream).
		checkOpenSSL(t, d.Entry().Addr, files, sidecar != "nginx")
		if tr == "http" {
			checkCurl(t, d.Entry().Addr, req, files)
		}
	}

	stopped = true
	if err := d.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(files.Key)); !os.IsNotExist(err) {
		t.Errorf("the keys' directory outlived the deployment: %v", err)
	}
}

// checkOpenSSL connects to addr with openssl s_client, a TLS client that
// is not Go's: the run's certificate is accepted, and no certificate is
// refused with TLS 1.3's certificate_required alert (where alert is set).
func checkOpenSSL(t *testing.T, addr string, f pki.Files, alert bool) {
	t.Helper()
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Log("openssl is not installed (Debian package openssl): skipping its checks")
		return
	}
	run := func(wait time.Duration, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, openssl, append([]string{"s_client", "-connect", addr, "-CAfile", f.CA, "-verify_return_error", "-brief"}, args...)...)
		// Wait before closing stdin, so that a refusal sent after the
		// client's Finished is read before s_client quits.
		cmd.Stdin = &slowEOF{d: wait}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := run(300*time.Millisecond, "-cert", f.Cert, "-key", f.Key); !strings.Contains(out, "CONNECTION ESTABLISHED") || !strings.Contains(out, "TLSv1.3") || strings.Contains(out, "alert") {
		t.Errorf("openssl s_client with the run's certificate:\n%s", out)
	}
	if !alert {
		return
	}
	// TLS 1.3 refuses after the client thinks the handshake done; on a
	// busy machine the proxy's alert can come after s_client has quit,
	// so a longer wait gets another try before that counts as accepted.
	var out string
	for _, wait := range []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second} {
		if out = run(wait); strings.Contains(out, "certificate required") {
			return
		}
	}
	t.Errorf("openssl s_client without a certificate was not refused with certificate_required:\n%s", out)
}

// checkCurl posts req to the http transport's route on addr with curl:
// answered with the run's certificate, refused without one.
func checkCurl(t *testing.T, addr string, req runtime.Request, f pki.Files) {
	t.Helper()
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Log("curl is not installed: skipping its checks")
		return
	}
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		base := []string{"-sS", "--fail", "--cacert", f.CA, "-H", "Content-Type: application/json", "--data-binary", "@-", "https://" + addr + req.Method}
		cmd := exec.CommandContext(ctx, curl, append(base, args...)...)
		cmd.Stdin = bytes.NewReader(req.JSON())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("--cert", f.Cert, "--key", f.Key); err != nil || !strings.Contains(out, "text") {
		t.Errorf("curl with the run's certificate: %v\n%s", err, out)
	}
	if out, err := run(); err == nil {
		t.Errorf("curl without a certificate got an answer:\n%s", out)
	}
}

// slowEOF is an empty stdin that ends after d.
type slowEOF struct{ d time.Duration }

func (s *slowEOF) Read([]byte) (int, error) {
	time.Sleep(s.d)
	return 0, io.EOF
}
