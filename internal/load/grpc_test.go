package load

import (
	"context"
	"encoding/base64"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/proto/echo"
)

func grpcServer(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	echo.RegisterEchoServer(s, echo.Service{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// TestGRPCByName calls methods by name: JSON bodies through the types
// this binary links, raw proto bytes, and status codes as error classes.
func TestGRPCByName(t *testing.T) {
	addr := grpcServer(t)
	raw, _ := proto.Marshal(&echo.EchoRequest{Payload: []byte("hi")})
	tests := []struct {
		name  string
		req   Request
		class string // expected class of every request; "ok" for none
	}{
		{"json", Request{Method: "svclab.echo.Echo/Echo", Body: `{"payload": "aGk="}`, Extract: map[string]string{"p": "json:payload"}}, "ok"},
		{"json template", Request{Method: "/svclab.echo.Echo/Echo", Body: `{"sleep_micros": "{{user}}"}`}, "ok"},
		{"raw bytes", Request{Method: "svclab.echo.Echo/Echo", BodyBase64: base64.StdEncoding.EncodeToString(raw)}, "ok"},
		{"status code", Request{Method: "svclab.echo.Echo/Echo", Body: `{"fail_code": 14}`}, "grpc_unavailable"},
		{"deadline", Request{Method: "svclab.echo.Echo/Echo", Body: `{"sleep_micros": 200000}`}, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			cfg := Config{Target: addr, Protocol: "grpc", Rate: 50, Duration: Duration(500 * time.Millisecond),
				Timeout: Duration(50 * time.Millisecond), Request: &req}
			res := run(t, cfg, Options{})
			tot := mustOp(t, res, "total")
			if tot.Count < 20 {
				t.Fatalf("only %d requests", tot.Count)
			}
			if tt.class == "ok" && tot.Errors != 0 || tt.class != "ok" && tot.ErrorsByClass[tt.class] != tot.Count {
				t.Fatalf("errors %d by class %v, want every request to be %s", tot.Errors, tot.ErrorsByClass, tt.class)
			}
		})
	}
	if _, err := NewTarget(Config{Target: addr, Protocol: "grpc", Rate: 1, Request: &Request{Method: "no.Such/Method", Body: "{}"}}); err == nil {
		t.Error("an unknown method with a JSON body was accepted")
	}
}

// TestGRPCOpOverTransports drives the echo service through the generated
// stub over each of svclab's transports, as the experiment runner does.
func TestGRPCOpOverTransports(t *testing.T) {
	for _, name := range transport.Names() {
		t.Run(name, func(t *testing.T) {
			tr, err := transport.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := tr.NewServer(transport.ServerOptions{})
			echo.RegisterEchoServer(srv, echo.Service{})
			go srv.Serve(lis)
			defer srv.Stop()
			conn, err := tr.Dial(context.Background(), "tcp", lis.Addr().String(), transport.DialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			cli := echo.NewEchoClient(conn)
			tg := &Target{Ops: []Op{
				GRPCOp("", conn, echo.Echo_Echo_FullMethodName,
					func(s *Session) (any, error) { return &echo.EchoRequest{Payload: []byte("x")}, nil },
					func() any { return new(echo.EchoResponse) }),
				FuncOp("fail", func(ctx context.Context) error {
					_, err := cli.Echo(ctx, &echo.EchoRequest{FailCode: 8})
					return err
				}),
			}, Flow: "both"}
			res, err := Run(context.Background(), Config{Mode: "closed", Users: 2, Requests: 100}, tg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			if op := mustOp(t, res, "svclab.echo.Echo/Echo"); op.Count != 100 || op.Errors != 0 {
				t.Errorf("stub op: %+v", op)
			}
			if op := mustOp(t, res, "fail"); op.ErrorsByClass["grpc_resource_exhausted"] != 100 {
				t.Errorf("status over %s: %v", name, op.ErrorsByClass)
			}
		})
	}
}
