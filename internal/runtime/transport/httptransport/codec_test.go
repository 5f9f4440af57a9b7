package httptransport_test

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/httptransport"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/proto/echo"
)

// TestCodecsInteroperate calls Mirror with every pair of client and
// server codecs: both speak the same JSON, so the shape comes back whole.
func TestCodecsInteroperate(t *testing.T) {
	zero := int64(0)
	shape := &echo.Shape{
		Name: "tri\"angle\n", Count: &zero, Kind: echo.Shape_KIND_POLYGON,
		Size:   &echo.Shape_Radius{Radius: 1.5},
		Points: []*echo.Point{{X: 1}, {Y: -2}},
		Labels: map[string]*echo.Point{"a": {X: 3}, "é": {}},
		Blob:   []byte{0, 0xff},
	}
	for _, sc := range append([]string{""}, spec.HTTPCodecs...) {
		addr := strings.TrimPrefix(serveWith(t, transport.ServerOptions{Codec: sc}), "http://")
		for _, cc := range spec.HTTPCodecs {
			conn, err := httptransport.Dial(context.Background(), "tcp", addr, transport.DialOptions{Codec: cc})
			if err != nil {
				t.Fatal(err)
			}
			got, err := echo.NewEchoClient(conn).Mirror(context.Background(), shape)
			if err != nil || !proto.Equal(got, shape) {
				t.Errorf("server %q, client %q: %v, %v", sc, cc, got, err)
			}
			conn.Close()
		}
	}
}

func TestUnknownCodec(t *testing.T) {
	if _, err := httptransport.Dial(context.Background(), "tcp", "127.0.0.1:1", transport.DialOptions{Codec: "sonic"}); err == nil || !strings.Contains(err.Error(), `"sonic"`) {
		t.Errorf("Dial: %v, want an error naming the codec", err)
	}
	s := httptransport.NewServer(transport.ServerOptions{Codec: "sonic"})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	if err := s.Serve(lis); err == nil || !strings.Contains(err.Error(), `"sonic"`) {
		t.Errorf("Serve: %v, want an error naming the codec", err)
	}
}
