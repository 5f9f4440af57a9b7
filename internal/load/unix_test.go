package load

import (
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"

	"github.com/svclab/svclab/proto/echo"
)

// TestUnixTarget drives servers on unix sockets over each protocol: every
// request reaches the server, at the request's path alone (the socket's
// is no part of it), with Host: localhost.
func TestUnixTarget(t *testing.T) {
	dir := t.TempDir()
	serve := func(name string, h2c bool) string {
		lis, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/cart" || r.Host != "localhost" || (r.ProtoMajor == 2) != h2c {
				http.Error(w, r.Proto+" "+r.Host+r.URL.Path, http.StatusBadRequest)
			}
		})}
		if h2c {
			srv.Protocols = new(http.Protocols)
			srv.Protocols.SetUnencryptedHTTP2(true)
		}
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(func() { srv.Close() })
		return UnixTarget(lis.Addr().String())
	}
	rpc, err := net.Listen("unix", filepath.Join(dir, "grpc.sock"))
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	echo.RegisterEchoServer(gs, echo.Service{})
	go func() { _ = gs.Serve(rpc) }()
	t.Cleanup(gs.Stop)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"http", Config{Target: serve("http.sock", false), Request: &Request{Path: "/cart"}}},
		{"h2c", Config{Target: serve("h2c.sock", true), Protocol: "h2c", Request: &Request{Path: "/cart"}}},
		{"grpc", Config{Target: UnixTarget(rpc.Addr().String()), Protocol: "grpc", Request: &Request{Method: "svclab.echo.Echo/Echo", Body: "{}"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Mode, cfg.Users, cfg.Requests = "closed", 2, 100
			if err := CheckLoopback(cfg.Target); err != nil {
				t.Errorf("CheckLoopback: %v", err)
			}
			res := run(t, cfg, Options{})
			if tot := mustOp(t, res, "total"); tot.Count != 100 || tot.Errors != 0 {
				t.Fatalf("%s over %s: %+v", tc.name, cfg.Target, tot)
			}
		})
	}
}
