package all_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
	"github.com/svclab/svclab/proto/echo"
)

// BenchmarkRoundTrip measures the latency of one call in flight for each
// svclab transport beside the bare library it wraps:
//
//	inproc  svclab inproc through the generated stub, beside rawtcp, a
//	        length-prefixed echo over a TCP socket: the network floor
//	netrpc  svclab netrpc, beside net/rpc with gob and a hand-written method
//	grpc    svclab grpc, beside grpc-go with a hand-written ServiceDesc
//	http    svclab http (protojson), beside net/http with encoding/json
//	protorpc svclab protorpc, beside rawtcp: protorpc wraps no library, so
//	        its bare peer is the network floor itself
//
// svclab calls go through the generated stub. Every network peer serves on
// loopback TCP in this process. The two of a pair take turns, call by call
// and in alternating order, so both see the same background load and
// their ratio holds up on a busy machine where absolute figures do not.
//
// Each call's latency goes into an HdrHistogram; the metrics are p50 and
// p99 in microseconds for svclab (p50-us, p99-us) and the bare library
// (bare-p50-us, bare-p99-us), and p50-ratio, svclab over bare. ns/op is
// the time of one turn of both and means little. Beside inproc, two more
// peers take their turns: the implementation called as a plain method
// (direct-p50-us), the floor under what any stub could cost, and the
// generated stub over a ClientConnInterface that only calls the
// implementation (stub-floor-p50-us), the floor under what any transport
// behind the grpc-go stub could cost.
// scripts/bench/transports.sh tabulates the metrics.
func BenchmarkRoundTrip(b *testing.B) {
	pairs := [][]peer{
		{inprocPeer(b), rawTCPPeer(b), directPeer(b), stubFloorPeer()},
		{svclabPeer(b, "netrpc"), netrpcBarePeer(b)},
		{svclabPeer(b, "grpc"), grpcBarePeer(b)},
		{svclabPeer(b, "http"), httpBarePeer(b)},
		{svclabPeer(b, "protorpc"), rawTCPPeer(b)},
	}
	for _, size := range []struct {
		name string
		n    int
	}{{"100B", 100}, {"100KB", 100 << 10}} {
		p := payload(size.n)
		for _, pair := range pairs {
			b.Run(size.name+"/"+pair[0].name, func(b *testing.B) {
				measurePair(b, pair[0], pair[1], pair[2:], p)
			})
		}
	}
}

type peer struct {
	name string
	// call returns a function that makes one round trip with p, checking
	// that p came back.
	call func(b *testing.B, p []byte) func()
	// batch, when above 1, times batches of calls and records their mean:
	// a call of a few hundred nanoseconds is too close to the cost of
	// reading the clock twice to time alone.
	batch int
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(10*time.Second), 3) }

// timed runs one turn of a peer and records it.
func timed(call func(), batch int, h *hdrhistogram.Histogram) {
	t0 := time.Now()
	for range batch {
		call()
	}
	h.RecordValue(int64(time.Since(t0)) / int64(batch))
}

func measurePair(b *testing.B, svclab, bare peer, extra []peer, p []byte) {
	sc, bc := svclab.call(b, p), bare.call(b, p)
	sb, bb := max(svclab.batch, 1), max(bare.batch, 1)
	for range 50 { // connections, type descriptions, pools
		sc()
		bc()
	}
	sh, bh := newHist(), newHist()
	xc := make([]func(), len(extra))
	xh := make([]*hdrhistogram.Histogram, len(extra))
	for i, x := range extra {
		xc[i], xh[i] = x.call(b, p), newHist()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			timed(sc, sb, sh)
			timed(bc, bb, bh)
		} else {
			timed(bc, bb, bh)
			timed(sc, sb, sh)
		}
		for j, x := range extra {
			timed(xc[j], max(x.batch, 1), xh[j])
		}
	}
	b.StopTimer()
	for j, x := range extra {
		b.ReportMetric(float64(xh[j].ValueAtQuantile(50))/1e3, x.name+"-p50-us")
	}
	s50, b50 := float64(sh.ValueAtQuantile(50))/1e3, float64(bh.ValueAtQuantile(50))/1e3
	b.ReportMetric(s50, "p50-us")
	b.ReportMetric(float64(sh.ValueAtQuantile(99))/1e3, "p99-us")
	b.ReportMetric(b50, "bare-p50-us")
	b.ReportMetric(float64(bh.ValueAtQuantile(99))/1e3, "bare-p99-us")
	b.ReportMetric(s50/b50, "p50-ratio")
}

func check(b *testing.B, got, want []byte) {
	if len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
		b.Fatalf("echo returned %d bytes, sent %d", len(got), len(want))
	}
}

func tcpListener(b *testing.B) net.Listener {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lis.Close() })
	return lis
}

func rawTCPPeer(b *testing.B) peer {
	lis := tcpListener(b)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hdr [4]byte
				buf := make([]byte, 0, 1<<20)
				for {
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					n := binary.BigEndian.Uint32(hdr[:])
					buf = append(buf[:0], hdr[:]...)
					buf = append(buf, make([]byte, n)...)
					if _, err := io.ReadFull(c, buf[4:]); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	return peer{name: "rawtcp", call: func(b *testing.B, p []byte) func() {
		c, err := net.Dial("tcp", lis.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
		frame = append(frame, p...)
		in := make([]byte, len(frame))
		return func() {
			if _, err := c.Write(frame); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, in); err != nil {
				b.Fatal(err)
			}
			check(b, in[4:], p)
		}
	}}
}

func inprocPeer(b *testing.B) peer {
	ch := inproc.New(transport.ServerOptions{}, transport.DialOptions{})
	echo.RegisterEchoServer(ch, echo.Service{})
	return peer{name: "inproc", batch: 32, call: stubCall(ch)}
}

// stubCall makes the echo call through the generated stub over cc.
func stubCall(cc grpc.ClientConnInterface) func(b *testing.B, p []byte) func() {
	return func(b *testing.B, p []byte) func() {
		c := echo.NewEchoClient(cc)
		req := &echo.EchoRequest{Payload: p}
		ctx := context.Background()
		return func() {
			resp, err := c.Echo(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			check(b, resp.Payload, p)
		}
	}
}

// directPeer calls the echo implementation as a plain Go method.
func directPeer(b *testing.B) peer {
	var s echo.EchoServer = echo.Service{}
	return peer{name: "direct", batch: 32, call: func(b *testing.B, p []byte) func() {
		req := &echo.EchoRequest{Payload: p}
		ctx := context.Background()
		return func() {
			resp, err := s.Echo(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			check(b, resp.Payload, p)
		}
	}}
}

// minimalConn is the least a grpc.ClientConnInterface can do for the echo
// method: call the implementation and hand its payload to the stub's reply.
type minimalConn struct{ s echo.EchoServer }

func (c minimalConn) Invoke(ctx context.Context, _ string, args, reply any, _ ...grpc.CallOption) error {
	resp, err := c.s.Echo(ctx, args.(*echo.EchoRequest))
	if err != nil {
		return err
	}
	reply.(*echo.EchoResponse).Payload = resp.Payload
	return nil
}

func (minimalConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, nil
}

// stubFloorPeer calls through the generated stub over minimalConn.
func stubFloorPeer() peer {
	return peer{name: "stub-floor", batch: 32, call: stubCall(minimalConn{echo.Service{}})}
}

// svclabPeer serves the echo service on the named transport over TCP and
// calls it through the generated stub.
func svclabPeer(b *testing.B, name string) peer { return svclabTLSPeer(b, name, nil, nil) }

// svclabTLSPeer is svclabPeer with the server and client speaking TLS
// with server and client (plaintext when nil).
func svclabTLSPeer(b *testing.B, name string, server, client *tls.Config) peer {
	tr, err := transport.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	srv := tr.NewServer(transport.ServerOptions{TLS: server})
	echo.RegisterEchoServer(srv, echo.Service{})
	lis := tcpListener(b)
	go srv.Serve(lis)
	b.Cleanup(srv.Stop)
	conn, err := tr.Dial(context.Background(), "tcp", lis.Addr().String(), transport.DialOptions{TLS: client})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return peer{name: name, call: stubCall(conn)}
}

// BareArgs and BareEcho are a net/rpc service as one writes it by hand.
type BareArgs struct{ Payload []byte }

type BareEcho struct{}

func (BareEcho) Echo(args *BareArgs, reply *BareArgs) error {
	reply.Payload = args.Payload
	return nil
}

func netrpcBarePeer(b *testing.B) peer {
	s := rpc.NewServer()
	if err := s.Register(BareEcho{}); err != nil {
		b.Fatal(err)
	}
	lis := tcpListener(b)
	go s.Accept(lis)
	return peer{name: "netrpc-bare", call: func(b *testing.B, p []byte) func() {
		c, err := rpc.Dial("tcp", lis.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		args := &BareArgs{Payload: p}
		return func() {
			var reply BareArgs
			if err := c.Call("BareEcho.Echo", args, &reply); err != nil {
				b.Fatal(err)
			}
			check(b, reply.Payload, p)
		}
	}}
}

// bareDesc is a grpc service registered by hand, without generated code.
var bareDesc = grpc.ServiceDesc{
	ServiceName: "bare.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Echo",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return &wrapperspb.BytesValue{Value: in.Value}, nil
		},
	}},
}

func grpcBarePeer(b *testing.B) peer { return grpcBareTLSPeer(b, nil, nil) }

// grpcBareTLSPeer is grpcBarePeer with grpc-go's own TLS credentials made
// of server and client (plaintext when nil).
func grpcBareTLSPeer(b *testing.B, server, client *tls.Config) peer {
	var sopts []grpc.ServerOption
	creds := insecure.NewCredentials()
	if server != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(server)))
		creds = credentials.NewTLS(client)
	}
	s := grpc.NewServer(sopts...)
	s.RegisterService(&bareDesc, struct{}{})
	lis := tcpListener(b)
	go s.Serve(lis)
	b.Cleanup(s.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(creds))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	return peer{name: "grpc-bare", call: func(b *testing.B, p []byte) func() {
		in := &wrapperspb.BytesValue{Value: p}
		ctx := context.Background()
		return func() {
			out := new(wrapperspb.BytesValue)
			if err := cc.Invoke(ctx, "/bare.Echo/Echo", in, out); err != nil {
				b.Fatal(err)
			}
			check(b, out.Value, p)
		}
	}}
}

type bareJSON struct {
	Payload []byte `json:"payload"`
}

func httpBarePeer(b *testing.B) peer { return httpBareTLSPeer(b, nil, nil) }

// httpBareTLSPeer is httpBarePeer over net/http's own TLS with server and
// client (plaintext when nil), HTTP/1.1 as svclab's http transport speaks.
func httpBareTLSPeer(b *testing.B, server, client *tls.Config) peer {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		var in bareJSON
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(bareJSON{Payload: in.Payload})
	})
	hs := &http.Server{Handler: mux}
	lis := tcpListener(b)
	ht := http.DefaultTransport.(*http.Transport).Clone()
	scheme := "http"
	if server != nil {
		hs.TLSConfig = server.Clone()
		hs.TLSConfig.NextProtos = []string{"http/1.1"}
		lis = tls.NewListener(lis, hs.TLSConfig)
		ht.TLSClientConfig = client
		ht.ForceAttemptHTTP2 = false
		scheme = "https"
	}
	go hs.Serve(lis)
	b.Cleanup(func() { hs.Close() })
	hc := &http.Client{Transport: ht}
	b.Cleanup(hc.CloseIdleConnections)
	url := scheme + "://" + lis.Addr().String() + "/echo"
	return peer{name: "http-bare", call: func(b *testing.B, p []byte) func() {
		return func() {
			body, err := json.Marshal(bareJSON{Payload: p})
			if err != nil {
				b.Fatal(err)
			}
			resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			var out bareJSON
			err = json.NewDecoder(resp.Body).Decode(&out)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			check(b, out.Payload, p)
		}
	}}
}
