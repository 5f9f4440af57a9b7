package protorpctransport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	spb "google.golang.org/genproto/googleapis/rpc/status"
)

// The wire format, documented for other implementations in
// docs/TRANSPORTS.md. A connection starts with the client's preface; after
// it both sides send frames:
//
//	length      uint32, big-endian: the bytes after this field
//	call id     uint32, big-endian: the client's number for the call
//	kind        uint8: kindRequest, kindResponse or kindCancel
//	header len  uint32, big-endian
//	header      a protobuf message: requestHeader or responseHeader
//	message     the protobuf-encoded request or response, to the frame's end
const (
	prefixLen = 13 // length, call id, kind, header length
	fixedLen  = 9  // the part of the prefix the length field counts
)

// preface is what a client sends first: a magic number and the protocol
// version, so a server can tell a protorpc client from anything else (a
// TLS handshake, an HTTP request, noise) and close the connection.
var preface = [8]byte{'P', 'R', 'P', 'C', 0, 0, 0, 1}

// Frame kinds.
const (
	kindRequest  = 1 // client to server: a call
	kindResponse = 2 // server to client: a call's result
	kindCancel   = 3 // client to server: the client gave up on a call
)

// MaxMessageSize bounds the protobuf message a frame carries, as grpc-go's
// default bounds what it receives (4 MiB): the same messages pass on both
// transports.
const MaxMessageSize = 4 << 20

// MaxHeaderSize bounds a frame's header, which is mostly metadata.
const MaxHeaderSize = 64 << 10

// Field numbers of the protobuf messages RequestHeader, ResponseHeader
// and Metadata, whose schema docs/TRANSPORTS.md gives. The headers are
// encoded by hand, with protowire: they are small, and a generated type
// would be an allocation per call.
const (
	reqMethod   = 1
	reqTimeout  = 2
	reqMetadata = 3

	respStatus  = 1
	respHeader  = 2
	respTrailer = 3

	mdKey   = 1
	mdValue = 2
)

// prefix is a frame's fixed part, decoded.
type prefix struct {
	id   uint32
	kind byte
	hlen int // header length
	mlen int // message length
}

// errMalformed is a frame that cannot be parsed: the stream is lost.
var errMalformed = errors.New("protorpc: malformed frame")

// parsePrefix decodes the first prefixLen bytes of a frame.
func parsePrefix(b []byte) (prefix, error) {
	length := binary.BigEndian.Uint32(b)
	hlen := binary.BigEndian.Uint32(b[9:])
	if length < fixedLen || hlen > length-fixedLen {
		return prefix{}, fmt.Errorf("%w: length %d, header length %d", errMalformed, length, hlen)
	}
	return prefix{
		id:   binary.BigEndian.Uint32(b[4:]),
		kind: b[8],
		hlen: int(hlen),
		mlen: int(length - fixedLen - hlen),
	}, nil
}

// oversized says why a frame is too large to accept, or returns nil.
func (p prefix) oversized() error {
	switch {
	case p.mlen > MaxMessageSize:
		return fmt.Errorf("message of %d bytes exceeds the limit of %d (MaxMessageSize)", p.mlen, MaxMessageSize)
	case p.hlen > MaxHeaderSize:
		return fmt.Errorf("header of %d bytes exceeds the limit of %d (MaxHeaderSize)", p.hlen, MaxHeaderSize)
	}
	return nil
}

// putPrefix writes the prefix of a frame whose header and message follow
// it in b.
func putPrefix(b []byte, id uint32, kind byte, hlen int) {
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[4:], id)
	b[8] = kind
	binary.BigEndian.PutUint32(b[9:], uint32(hlen))
}

// buffers holds frame buffers by power-of-two size class, up to the
// largest frame; larger requests are allocated and dropped.
var buffers = func() mem.BufferPool {
	var exps []uint8
	for e := uint8(8); e <= 23; e++ {
		exps = append(exps, e)
	}
	p, err := mem.NewBinaryTieredBufferPool(exps...)
	if err != nil {
		panic("protorpc: " + err.Error()) // fixed arguments: a bug here
	}
	return p
}()

// encodeFrame returns a pooled buffer holding a whole frame: the prefix,
// the header that appendHeader writes (hsize bytes), and msg, which may be
// nil for none.
func encodeFrame(id uint32, kind byte, hsize int, appendHeader func([]byte) []byte, msg proto.Message) (*[]byte, error) {
	msize := 0
	if msg != nil {
		msize = proto.Size(msg)
	}
	if msize > MaxMessageSize {
		return nil, fmt.Errorf("message of %d bytes exceeds the limit of %d (MaxMessageSize)", msize, MaxMessageSize)
	}
	bp := buffers.Get(prefixLen + hsize + msize)
	b := (*bp)[:prefixLen]
	if appendHeader != nil {
		b = appendHeader(b)
	}
	hlen := len(b) - prefixLen
	if msg != nil {
		var err error
		b, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, msg)
		if err != nil {
			buffers.Put(bp)
			return nil, err
		}
	}
	putPrefix(b, id, kind, hlen)
	*bp = b
	return bp, nil
}

// requestHeader is a decoded RequestHeader. method aliases the frame.
type requestHeader struct {
	method  []byte
	timeout int64
	md      metadata.MD
}

func requestHeaderSize(method string, timeout int64, md metadata.MD) int {
	n := protowire.SizeTag(reqMethod) + protowire.SizeBytes(len(method))
	if timeout != 0 {
		n += protowire.SizeTag(reqTimeout) + protowire.SizeVarint(uint64(timeout))
	}
	return n + metadataSize(reqMetadata, md)
}

func appendRequestHeader(b []byte, method string, timeout int64, md metadata.MD) []byte {
	b = protowire.AppendTag(b, reqMethod, protowire.BytesType)
	b = protowire.AppendString(b, method)
	if timeout != 0 {
		b = protowire.AppendTag(b, reqTimeout, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(timeout))
	}
	return appendMetadata(b, reqMetadata, md)
}

func parseRequestHeader(b []byte, h *requestHeader) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		switch {
		case num == reqMethod && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			h.method = v
			return n, nil
		case num == reqTimeout && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			h.timeout = int64(v)
			return n, nil
		case num == reqMetadata && typ == protowire.BytesType:
			return consumeMetadata(b, &h.md)
		}
		return protowire.ConsumeFieldValue(num, typ, b), nil
	})
}

// responseHeader is a decoded ResponseHeader.
type responseHeader struct {
	status          *spb.Status
	header, trailer metadata.MD
}

// encodeStatus returns a google.rpc.Status, protobuf-encoded. protobuf
// refuses a string that is not UTF-8, which a status message echoing a
// peer's bytes (an unknown method's name) can be: such a message is
// repaired, and details that will not encode are dropped, so that the code
// always goes through.
func encodeStatus(st *status.Status) []byte {
	b, err := proto.Marshal(st.Proto())
	if err != nil {
		b, _ = proto.Marshal(&spb.Status{Code: int32(st.Code()), Message: strings.ToValidUTF8(st.Message(), "\uFFFD")})
	}
	return b
}

// responseHeaderSize and appendResponseHeader take the status encoded, as
// encodeStatus gives it, or nil for success.
func responseHeaderSize(st []byte, header, trailer metadata.MD) int {
	n := metadataSize(respHeader, header) + metadataSize(respTrailer, trailer)
	if st != nil {
		n += protowire.SizeTag(respStatus) + protowire.SizeBytes(len(st))
	}
	return n
}

func appendResponseHeader(b []byte, st []byte, header, trailer metadata.MD) []byte {
	if st != nil {
		b = protowire.AppendTag(b, respStatus, protowire.BytesType)
		b = protowire.AppendBytes(b, st)
	}
	b = appendMetadata(b, respHeader, header)
	return appendMetadata(b, respTrailer, trailer)
}

func parseResponseHeader(b []byte, h *responseHeader) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		if typ == protowire.BytesType {
			switch num {
			case respStatus:
				v, n := protowire.ConsumeBytes(b)
				if n < 0 {
					return n, nil
				}
				h.status = new(spb.Status)
				if err := proto.Unmarshal(v, h.status); err != nil {
					return 0, fmt.Errorf("protorpc: status in response header: %w", err)
				}
				return n, nil
			case respHeader:
				return consumeMetadata(b, &h.header)
			case respTrailer:
				return consumeMetadata(b, &h.trailer)
			}
		}
		return protowire.ConsumeFieldValue(num, typ, b), nil
	})
}

// eachField calls f with each field of the message b; f consumes the
// field's value and returns its length, or a negative protowire error.
func eachField(b []byte, f func(protowire.Number, protowire.Type, []byte) (int, error)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: header: %v", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		m, err := f(num, typ, b)
		if err != nil {
			return err
		}
		if m < 0 {
			return fmt.Errorf("%w: header field %d: %v", errMalformed, num, protowire.ParseError(m))
		}
		b = b[m:]
	}
	return nil
}

func metadataSize(num protowire.Number, md metadata.MD) int {
	n := 0
	for k, vs := range md {
		for _, v := range vs {
			e := protowire.SizeTag(mdKey) + protowire.SizeBytes(len(k)) + protowire.SizeTag(mdValue) + protowire.SizeBytes(len(v))
			n += protowire.SizeTag(num) + protowire.SizeBytes(e)
		}
	}
	return n
}

func appendMetadata(b []byte, num protowire.Number, md metadata.MD) []byte {
	for k, vs := range md {
		for _, v := range vs {
			e := protowire.SizeTag(mdKey) + protowire.SizeBytes(len(k)) + protowire.SizeTag(mdValue) + protowire.SizeBytes(len(v))
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(e))
			b = protowire.AppendTag(b, mdKey, protowire.BytesType)
			b = protowire.AppendString(b, k)
			b = protowire.AppendTag(b, mdValue, protowire.BytesType)
			b = protowire.AppendString(b, v)
		}
	}
	return b
}

// consumeMetadata adds the Metadata entry at the start of b to *md. Keys
// are lower-cased, as grpc's metadata package keeps them.
func consumeMetadata(b []byte, md *metadata.MD) (int, error) {
	entry, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return n, nil
	}
	var key, value []byte
	err := eachField(entry, func(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
		if typ == protowire.BytesType && (num == mdKey || num == mdValue) {
			v, n := protowire.ConsumeBytes(b)
			if num == mdKey {
				key = v
			} else {
				value = v
			}
			return n, nil
		}
		return protowire.ConsumeFieldValue(num, typ, b), nil
	})
	if err != nil {
		return 0, err
	}
	if *md == nil {
		*md = metadata.MD{}
	}
	k := strings.ToLower(string(key))
	(*md)[k] = append((*md)[k], string(value))
	return n, nil
}
