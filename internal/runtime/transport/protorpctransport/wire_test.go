package protorpctransport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	spb "google.golang.org/genproto/googleapis/rpc/status"

	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/proto/echo"
)

func TestRequestHeaderRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		timeout int64
		md      metadata.MD
	}{
		{"bare", "/svclab.echo.Echo/Echo", 0, nil},
		{"deadline", "/svclab.echo.Echo/Echo", int64(1500 * time.Millisecond), nil},
		{"metadata", "/a.B/C", 1, metadata.Pairs("k", "v1", "k", "v2", "bin-bin", "\x00\xff\x80")},
		{"empty value", "/a.B/C", 0, metadata.MD{"k": {""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendRequestHeader(nil, tc.method, tc.timeout, tc.md)
			if n := requestHeaderSize(tc.method, tc.timeout, tc.md); n != len(b) {
				t.Errorf("size %d, encoded %d bytes", n, len(b))
			}
			var h requestHeader
			if err := parseRequestHeader(b, &h); err != nil {
				t.Fatal(err)
			}
			if string(h.method) != tc.method || h.timeout != tc.timeout {
				t.Errorf("method %q timeout %d, want %q %d", h.method, h.timeout, tc.method, tc.timeout)
			}
			if !mdEqual(h.md, tc.md) {
				t.Errorf("metadata %v, want %v", h.md, tc.md)
			}
		})
	}
}

func TestResponseHeaderRoundTrip(t *testing.T) {
	withDetails, err := status.New(codes.NotFound, "no such thing").WithDetails(&spb.Status{Code: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		st              *spb.Status
		header, trailer metadata.MD
	}{
		{"ok", nil, nil, nil},
		{"status", status.New(codes.Internal, "boom").Proto(), nil, nil},
		{"details", withDetails.Proto(), nil, nil},
		{"metadata", nil, metadata.Pairs("h", "1"), metadata.Pairs("t", "2", "t", "3")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st []byte
			if tc.st != nil {
				st = encodeStatus(status.FromProto(tc.st))
			}
			b := appendResponseHeader(nil, st, tc.header, tc.trailer)
			if n := responseHeaderSize(st, tc.header, tc.trailer); n != len(b) {
				t.Errorf("size %d, encoded %d bytes", n, len(b))
			}
			var h responseHeader
			if err := parseResponseHeader(b, &h); err != nil {
				t.Fatal(err)
			}
			if (h.status == nil) != (tc.st == nil) || (tc.st != nil && !proto.Equal(h.status, tc.st)) {
				t.Errorf("status %v, want %v", h.status, tc.st)
			}
			if !mdEqual(h.header, tc.header) || !mdEqual(h.trailer, tc.trailer) {
				t.Errorf("header %v trailer %v, want %v %v", h.header, h.trailer, tc.header, tc.trailer)
			}
		})
	}
}

// TestHeaderUnknownFields checks that a header with fields this version
// does not know still parses, as protobuf promises a later version.
func TestHeaderUnknownFields(t *testing.T) {
	b := appendRequestHeader(nil, "/a.B/C", 5, nil)
	b = protowire.AppendTag(b, 99, protowire.BytesType)
	b = protowire.AppendString(b, "from the future")
	b = protowire.AppendTag(b, 100, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 1)
	var h requestHeader
	if err := parseRequestHeader(b, &h); err != nil {
		t.Fatal(err)
	}
	if string(h.method) != "/a.B/C" || h.timeout != 5 {
		t.Errorf("got %q %d", h.method, h.timeout)
	}
}

func mdEqual(a, b metadata.MD) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb := b[k]
		if len(va) != len(vb) {
			return false
		}
		for i := range va {
			if va[i] != vb[i] {
				return false
			}
		}
	}
	return true
}

func TestParsePrefix(t *testing.T) {
	frame := func(length, id uint32, kind byte, hlen uint32) []byte {
		b := make([]byte, prefixLen)
		binary.BigEndian.PutUint32(b, length)
		binary.BigEndian.PutUint32(b[4:], id)
		b[8] = kind
		binary.BigEndian.PutUint32(b[9:], hlen)
		return b
	}
	for _, tc := range []struct {
		name      string
		b         []byte
		want      prefix
		malformed bool
		oversized bool
	}{
		{"empty frame", frame(9, 1, kindCancel, 0), prefix{id: 1, kind: kindCancel}, false, false},
		{"header and message", frame(9+3+5, 0xfffffffe, kindRequest, 3), prefix{id: 0xfffffffe, kind: kindRequest, hlen: 3, mlen: 5}, false, false},
		{"shorter than the prefix", frame(8, 1, kindRequest, 0), prefix{}, true, false},
		{"header beyond the frame", frame(9+3, 1, kindRequest, 4), prefix{}, true, false},
		{"header length wraps", frame(9, 1, kindRequest, 0xffffffff), prefix{}, true, false},
		{"largest message", frame(9+MaxMessageSize, 1, kindRequest, 0), prefix{id: 1, kind: kindRequest, mlen: MaxMessageSize}, false, false},
		{"message too large", frame(9+MaxMessageSize+1, 1, kindRequest, 0), prefix{id: 1, kind: kindRequest, mlen: MaxMessageSize + 1}, false, true},
		{"header too large", frame(9+MaxHeaderSize+1, 1, kindRequest, MaxHeaderSize+1), prefix{id: 1, kind: kindRequest, hlen: MaxHeaderSize + 1}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parsePrefix(tc.b)
			if tc.malformed {
				if !errors.Is(err, errMalformed) {
					t.Fatalf("got %+v, %v; want a malformed-frame error", p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p != tc.want {
				t.Errorf("got %+v, want %+v", p, tc.want)
			}
			if got := p.oversized() != nil; got != tc.oversized {
				t.Errorf("oversized: %v, want %v", p.oversized(), tc.oversized)
			}
		})
	}
}

// TestFrameLayout pins the byte layout docs/TRANSPORTS.md specifies, as an
// implementation in another language would read it.
func TestFrameLayout(t *testing.T) {
	msg := &echo.EchoRequest{Payload: []byte("hi")}
	bp, err := encodeFrame(0x01020304, kindRequest, requestHeaderSize("/a.B/C", 0, nil),
		func(b []byte) []byte { return appendRequestHeader(b, "/a.B/C", 0, nil) }, msg)
	if err != nil {
		t.Fatal(err)
	}
	header := []byte{0x0a, 6, '/', 'a', '.', 'B', '/', 'C'} // field 1, length 6
	body, _ := proto.Marshal(msg)
	want := []byte{0, 0, 0, byte(9 + len(header) + len(body)), 1, 2, 3, 4, kindRequest, 0, 0, 0, byte(len(header))}
	want = append(append(want, header...), body...)
	if !bytes.Equal(*bp, want) {
		t.Errorf("frame\n% x\nwant\n% x", *bp, want)
	}
}

// FuzzServerConn feeds a server connection arbitrary bytes after a valid
// preface: the server may answer or close, but must not panic or hang.
func FuzzServerConn(f *testing.F) {
	req := func(id uint32, method string, msg proto.Message) []byte {
		bp, err := encodeFrame(id, kindRequest, requestHeaderSize(method, 0, nil),
			func(b []byte) []byte { return appendRequestHeader(b, method, 0, nil) }, msg)
		if err != nil {
			f.Fatal(err)
		}
		return *bp
	}
	f.Add(req(1, "/svclab.echo.Echo/Echo", &echo.EchoRequest{Payload: []byte("x")}))
	f.Add(append(req(1, "/svclab.echo.Echo/Echo", &echo.EchoRequest{}), req(1, "/svclab.echo.Echo/Echo", &echo.EchoRequest{})...))
	f.Add(req(2, "/no.Such/Method", nil))
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, kindCancel, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, kindRequest, 0, 0, 0, 0})
	s := NewServer(transport.ServerOptions{})
	echo.RegisterEchoServer(s, echo.Service{})
	f.Cleanup(s.Stop)
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		defer client.Close()
		sc := s.newConn(server)
		done := make(chan struct{})
		go func() { sc.serve(); close(done) }()
		// Drain the server's answers, so its writes never block.
		go io.Copy(io.Discard, client)
		client.SetWriteDeadline(time.Now().Add(time.Second))
		client.Write(preface[:])
		client.Write(data)
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the server still reads 5s after the client closed")
		}
	})
}

// TestEncodeStatusInvalidUTF8 covers a status whose message protobuf
// would refuse (the fuzzer found it: an unknown method's name echoed in
// the message): the code and the readable part go through.
func TestEncodeStatusInvalidUTF8(t *testing.T) {
	var got spb.Status
	if err := proto.Unmarshal(encodeStatus(status.New(codes.Unimplemented, "unknown method /a\x80b")), &got); err != nil {
		t.Fatal(err)
	}
	if codes.Code(got.Code) != codes.Unimplemented || got.Message != "unknown method /a\uFFFDb" {
		t.Errorf("got %v", &got)
	}
}

// FuzzClientConn feeds a client connection arbitrary bytes as if from its
// server while a call waits: the call must end, with a response or an
// error, and nothing may panic.
func FuzzClientConn(f *testing.F) {
	resp := func(id uint32, st *status.Status, msg proto.Message) []byte {
		var sb []byte
		if st != nil {
			sb = encodeStatus(st)
		}
		bp, err := encodeFrame(id, kindResponse, responseHeaderSize(sb, nil, nil),
			func(b []byte) []byte { return appendResponseHeader(b, sb, nil, nil) }, msg)
		if err != nil {
			f.Fatal(err)
		}
		return *bp
	}
	f.Add(resp(1, nil, &echo.EchoResponse{Payload: []byte("x")}))
	f.Add(resp(1, status.New(codes.NotFound, "no"), nil))
	f.Add(append(resp(2, nil, nil), resp(1, nil, nil)...))
	f.Add([]byte{0, 0, 0, 10, 0, 0, 0, 1, kindResponse, 0, 0, 0, 1, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		defer server.Close()
		cc := &clientConn{owner: &Conn{addr: "pipe"}, nc: client, calls: map[uint32]*call{}}
		cc.w = newFrameWriter(client, func(err error) { cc.fail(err) })
		cl := &call{done: make(chan struct{}, 1)}
		if _, err := cc.register(cl); err != nil {
			t.Fatal(err)
		}
		go cc.read()
		server.SetWriteDeadline(time.Now().Add(time.Second))
		server.Write(data)
		server.Close()
		select {
		case <-cl.done:
		case <-time.After(5 * time.Second):
			t.Fatal("the call still waits 5s after the server closed")
		}
		cl.result("/svclab.echo.Echo/Echo", new(echo.EchoResponse), nil)
	})
}
