package httptransport_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/httptransport"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/proto/echo"
)

// serve starts an echo server and returns its base URL.
func serve(t *testing.T) string { return serveWith(t, transport.ServerOptions{}) }

func serveWith(t *testing.T, opts transport.ServerOptions) string {
	t.Helper()
	s := httptransport.NewServer(opts)
	echo.RegisterEchoServer(s, echo.Service{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return "http://" + lis.Addr().String()
}

// TestPlainClient calls the server as curl would, to pin the wire format
// that docs/TRANSPORTS.md documents, which both codecs speak.
func TestPlainClient(t *testing.T) {
	for _, codec := range spec.HTTPCodecs {
		t.Run(codec, func(t *testing.T) { testPlainClient(t, serveWith(t, transport.ServerOptions{Codec: codec})) })
	}
}

func testPlainClient(t *testing.T, base string) {
	for _, tc := range []struct {
		name, method, path, body string
		wantHTTP                 int
		wantBody                 string // substring
		wantGRPC                 string // Grpc-Status header
	}{
		{"ok", "POST", "/svclab.echo.Echo/Echo", `{"payload":"aGVsbG8="}`, 200, `"payload":"aGVsbG8="`, ""},
		{"proto field names", "POST", "/svclab.echo.Echo/Echo", `{"payload":"aGk=","sleep_micros":"1"}`, 200, `"payload":"aGk="`, ""},
		{"empty body", "POST", "/svclab.echo.Echo/Echo", ``, 200, `{}`, ""},
		{"unknown field ignored", "POST", "/svclab.echo.Echo/Echo", `{"colour":{"a":[1]},"payload":"aGk="}`, 200, `"payload":"aGk="`, ""},
		{"wrong type", "POST", "/svclab.echo.Echo/Echo", `{"failCode":"five"}`, 400, `"code":3`, "3"},
		{"url-safe base64", "POST", "/svclab.echo.Echo/Echo", `{"payload":"-_8"}`, 200, `"payload":"+/8="`, ""},
		{"not found", "POST", "/svclab.echo.Echo/Echo", `{"failCode":5}`, 404, `"code":5`, "5"},
		{"deadline", "POST", "/svclab.echo.Echo/Echo", `{"failCode":4}`, 504, `"message":"echo: failing with DeadlineExceeded as asked"`, "4"},
		{"bad json", "POST", "/svclab.echo.Echo/Echo", `{"payload":`, 400, `"code":3`, "3"},
		{"unknown method", "POST", "/svclab.echo.Echo/Nope", `{}`, 404, `"code":12`, "12"},
		{"wrong verb", "GET", "/svclab.echo.Echo/Echo", ``, 405, `"code":12`, "12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantHTTP {
				t.Errorf("HTTP %d, want %d (body %s)", resp.StatusCode, tc.wantHTTP, b)
			}
			if !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("body %s lacks %s", b, tc.wantBody)
			}
			if got := resp.Header.Get("Grpc-Status"); got != tc.wantGRPC {
				t.Errorf("Grpc-Status %q, want %q", got, tc.wantGRPC)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !json.Valid(b) {
				t.Errorf("body is not JSON: %s", b)
			}
		})
	}
}

func TestBadTimeoutHeader(t *testing.T) {
	base := serve(t)
	req, _ := http.NewRequest("POST", base+"/svclab.echo.Echo/Echo", strings.NewReader(`{}`))
	req.Header.Set("Grpc-Timeout", "soon")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Header.Get("Grpc-Status") != "3" {
		t.Errorf("HTTP %d, Grpc-Status %q; want 400 and 3", resp.StatusCode, resp.Header.Get("Grpc-Status"))
	}
}

// TestMappingRoundTrips checks that where HTTPStatus is one-to-one, Code
// inverts it, so an answer without a gRPC status still maps back sensibly.
func TestMappingRoundTrips(t *testing.T) {
	for _, c := range []codes.Code{codes.OK, codes.Canceled, codes.InvalidArgument, codes.DeadlineExceeded,
		codes.NotFound, codes.PermissionDenied, codes.Unauthenticated, codes.ResourceExhausted,
		codes.Aborted, codes.Unimplemented, codes.Internal, codes.Unavailable} {
		if got := httptransport.Code(httptransport.HTTPStatus(c)); got != c {
			t.Errorf("%s -> HTTP %d -> %s", c, httptransport.HTTPStatus(c), got)
		}
	}
	if got := httptransport.Code(418); got != codes.Unknown {
		t.Errorf("HTTP 418 -> %s, want Unknown", got)
	}
}

// TestForeignErrors checks that an answer from something that is not a
// svclab server (a proxy, a plain REST service) still yields a status.
func TestForeignErrors(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream is down", http.StatusServiceUnavailable)
	})}
	go hs.Serve(lis)
	defer hs.Close()
	c, err := httptransport.Dial(t.Context(), "tcp", lis.Addr().String(), transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = echo.NewEchoClient(c).Echo(t.Context(), &echo.EchoRequest{})
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "upstream is down") {
		t.Errorf("got %v, want Unavailable with the body's text", err)
	}
}

type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// TestKeepAlive checks that sequential calls reuse one connection,
// including after an error answer and with a large body.
func TestKeepAlive(t *testing.T) {
	s := httptransport.NewServer(transport.ServerOptions{})
	echo.RegisterEchoServer(s, echo.Service{})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &countingListener{Listener: inner}
	go s.Serve(lis)
	defer s.Stop()
	c, err := httptransport.Dial(t.Context(), "tcp", lis.Addr().String(), transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ec := echo.NewEchoClient(c)
	for i := range 20 {
		req := &echo.EchoRequest{Payload: make([]byte, 100)}
		switch i % 3 {
		case 1:
			req.Payload = make([]byte, 200<<10)
		case 2:
			req.FailCode = int32(codes.NotFound)
		}
		_, err := ec.Echo(t.Context(), req)
		if (err != nil) != (req.FailCode != 0) {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := lis.accepted.Load(); n != 1 {
		t.Errorf("20 sequential calls used %d connections, want 1", n)
	}
}

// TestClientIdleTimeout: with DialOptions.IdleTimeout the client drops a
// connection idle that long and dials anew, rather than reusing one the
// server (whose idle timeout is longer here) might be closing; without it,
// the connection is kept.
func TestClientIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		idle time.Duration
		want int32
	}{{0, 1}, {50 * time.Millisecond, 2}} {
		s := httptransport.NewServer(transport.ServerOptions{HTTPLimits: transport.HTTPLimits{IdleTimeout: 5 * time.Second}})
		echo.RegisterEchoServer(s, echo.Service{})
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lis := &countingListener{Listener: inner}
		go s.Serve(lis)
		c, err := httptransport.Dial(t.Context(), "tcp", lis.Addr().String(), transport.DialOptions{IdleTimeout: tc.idle})
		if err != nil {
			t.Fatal(err)
		}
		ec := echo.NewEchoClient(c)
		for i := range 2 {
			if _, err := ec.Echo(t.Context(), &echo.EchoRequest{}); err != nil {
				t.Fatalf("idle %v, call %d: %v", tc.idle, i, err)
			}
			time.Sleep(300 * time.Millisecond)
		}
		if n := lis.accepted.Load(); n != tc.want {
			t.Errorf("client idle timeout %v: two calls 300 ms apart used %d connections, want %d", tc.idle, n, tc.want)
		}
		c.Close()
		s.Stop()
	}
}
