package netrpctransport

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"io"
	"net/rpc"
	"reflect"
)

// The codecs speak net/rpc's gob protocol, a header value and a body value
// per request and per response, with one change for Svclab.Call: the
// envelope's fields ride in the header value, which is net/rpc's own
// header with fields added, and the body value is the message itself, of
// its concrete generated type (absent for a message with no fields, which
// gob cannot encode). That costs no more gob values per call than bare
// net/rpc, and spares the message gob's interface encoding, which would
// repeat its type name in every call and copy it through a buffer of its
// own. The receiving side knows the message's type without being told:
// from the method name on the server, from the caller's reply on the
// client. Every other request and response (Svclab.Cancel, net/rpc's own
// errors) is exactly what net/rpc's codec writes.

// requestHeader is rpc.Request plus the envelope fields of Request. The
// gRPC method name is sent once per connection, with the number that
// stands for it in later calls. The fields a call mostly leaves zero sit
// in a struct of their own, which gob leaves out whole when the pointer is
// nil: every field of the header costs time to encode, even a zero one.
type requestHeader struct {
	ServiceMethod string
	Seq           uint64
	MethodID      uint32
	Call          *callFields
}

type callFields struct {
	Method   string // set the first time MethodID is used
	Timeout  int64
	ID       uint64
	Metadata map[string][]string
	NoMsg    bool
}

// responseHeader is rpc.Response plus the envelope fields of Response,
// which only a failure or an empty message sets.
type responseHeader struct {
	ServiceMethod string
	Seq           uint64
	Error         string
	Reply         *replyFields
}

type replyFields struct {
	Status []byte
	NoMsg  bool
}

type clientCodec struct {
	rwc    io.ReadWriteCloser
	dec    *gob.Decoder
	enc    *gob.Encoder
	encBuf *bufio.Writer
	// net/rpc writes requests one at a time, and reads each response's
	// header and then its body on one goroutine, so these need no lock.
	req      requestHeader
	call     callFields
	resp     responseHeader
	envelope bool              // the response being read has an envelope body
	methods  map[string]uint32 // method IDs sent on this connection
}

func newClientCodec(rwc io.ReadWriteCloser) *clientCodec {
	buf := bufio.NewWriter(rwc)
	return &clientCodec{rwc: rwc, dec: gob.NewDecoder(rwc), enc: gob.NewEncoder(buf), encBuf: buf, methods: map[string]uint32{}}
}

func (c *clientCodec) WriteRequest(r *rpc.Request, body any) error {
	if err := c.writeRequest(r, body); err != nil {
		// Part of a request may have gone out, or a method ID been taken
		// that the server never learnt: the stream is unusable. Closing it
		// fails the calls in flight and makes the Conn dial afresh.
		c.rwc.Close()
		return err
	}
	return nil
}

func (c *clientCodec) writeRequest(r *rpc.Request, body any) error {
	if req, ok := body.(*Request); ok {
		c.req = requestHeader{ServiceMethod: r.ServiceMethod, Seq: r.Seq}
		id, known := c.methods[req.Method]
		if !known {
			id = uint32(len(c.methods) + 1)
			c.methods[req.Method] = id
		}
		c.req.MethodID = id
		if !known || req.Timeout != 0 || req.ID != 0 || req.Metadata != nil || req.NoMsg {
			c.call = callFields{Timeout: req.Timeout, ID: req.ID, Metadata: req.Metadata, NoMsg: req.NoMsg}
			if !known {
				c.call.Method = req.Method
			}
			c.req.Call = &c.call
		}
		err := c.enc.Encode(&c.req)
		c.call.Metadata = nil // do not keep the caller's map alive
		if err != nil {
			return err
		}
		if !req.NoMsg {
			if err := c.enc.Encode(req.msg); err != nil {
				return err
			}
		}
	} else {
		if err := c.enc.Encode(r); err != nil {
			return err
		}
		if err := c.enc.Encode(body); err != nil {
			return err
		}
	}
	return c.encBuf.Flush()
}

func (c *clientCodec) ReadResponseHeader(r *rpc.Response) error {
	// gob leaves out zero fields, so a reused header must start zeroed.
	c.resp = responseHeader{}
	if err := c.dec.Decode(&c.resp); err != nil {
		return err
	}
	r.ServiceMethod, r.Seq, r.Error = c.resp.ServiceMethod, c.resp.Seq, c.resp.Error
	// A net/rpc-level error comes with net/rpc's placeholder body.
	c.envelope = r.Error == "" && r.ServiceMethod == callMethod
	return nil
}

func (c *clientCodec) ReadResponseBody(body any) error {
	if !c.envelope {
		return c.dec.Decode(body)
	}
	resp, _ := body.(*Response)
	if resp == nil {
		resp = new(Response) // nobody waits for this reply: read it past
	}
	if rf := c.resp.Reply; rf != nil {
		resp.Status, resp.NoMsg = rf.Status, rf.NoMsg
	}
	if resp.NoMsg {
		return nil
	}
	if resp.msg == nil {
		return c.dec.DecodeValue(reflect.Value{}) // discards the value
	}
	return c.dec.Decode(resp.msg)
}

func (c *clientCodec) Close() error { return c.rwc.Close() }

type serverCodec struct {
	s      *Server
	rwc    io.ReadWriteCloser
	dec    *gob.Decoder
	enc    *gob.Encoder
	encBuf *bufio.Writer
	closed bool
	// net/rpc reads each request's header and then its body on one
	// goroutine, so req needs no lock; resp is used under net/rpc's
	// sending mutex.
	req      requestHeader
	resp     responseHeader
	reply    replyFields
	envelope bool // the request being read has an envelope body
	// methods[id-1] is the method the client numbered id.
	methods []*methodEntry
}

func newServerCodec(s *Server, rwc io.ReadWriteCloser) *serverCodec {
	buf := bufio.NewWriter(rwc)
	return &serverCodec{s: s, rwc: rwc, dec: gob.NewDecoder(rwc), enc: gob.NewEncoder(buf), encBuf: buf}
}

// method resolves the header's method ID, learning it if it is new.
func (c *serverCodec) method(h *requestHeader, cf *callFields) (*methodEntry, error) {
	id := int(h.MethodID)
	switch {
	case cf.Method != "" && id == len(c.methods)+1:
		c.methods = append(c.methods, c.s.resolve(cf.Method))
	case id < 1 || id > len(c.methods) || cf.Method != "" && cf.Method != c.methods[id-1].name:
		return nil, fmt.Errorf("netrpc: request with method ID %d (%q) out of sequence", id, cf.Method)
	}
	return c.methods[id-1], nil
}

var noCallFields callFields

func (c *serverCodec) ReadRequestHeader(r *rpc.Request) error {
	// A stock header decodes into requestHeader too: gob matches fields by
	// name, and the envelope fields stay zero.
	c.req = requestHeader{}
	if err := c.dec.Decode(&c.req); err != nil {
		return err
	}
	r.ServiceMethod, r.Seq = c.req.ServiceMethod, c.req.Seq
	c.envelope = r.ServiceMethod == callMethod
	return nil
}

func (c *serverCodec) ReadRequestBody(body any) error {
	if !c.envelope {
		return c.dec.Decode(body)
	}
	h := &c.req
	cf := h.Call
	if cf == nil {
		cf = &noCallFields
	}
	m, err := c.method(h, cf)
	if err != nil {
		// The client and this codec disagree on the stream: give up on it.
		c.Close()
		return err
	}
	req, _ := body.(*Request)
	if req != nil {
		req.Method, req.Timeout, req.ID, req.Metadata, req.NoMsg = m.name, cf.Timeout, cf.ID, cf.Metadata, cf.NoMsg
		req.mt = m
	}
	if cf.NoMsg {
		return nil
	}
	if req == nil || m.m == nil {
		// Nobody to hand it to, or an unknown method that Call will answer
		// Unimplemented: read the message past.
		return c.dec.DecodeValue(reflect.Value{}) // discards the value
	}
	req.msg = reflect.New(m.types.in.Elem()).Interface()
	return c.dec.Decode(req.msg)
}

func (c *serverCodec) WriteResponse(r *rpc.Response, body any) error {
	var err error
	if resp, ok := body.(*Response); ok && r.Error == "" {
		c.resp = responseHeader{ServiceMethod: r.ServiceMethod, Seq: r.Seq}
		if resp.Status != nil || resp.NoMsg {
			c.reply = replyFields{Status: resp.Status, NoMsg: resp.NoMsg}
			c.resp.Reply = &c.reply
		}
		err = c.enc.Encode(&c.resp)
		if err == nil && !resp.NoMsg {
			err = c.enc.Encode(resp.msg)
		}
	} else {
		err = c.enc.Encode(r)
		if err == nil {
			err = c.enc.Encode(body)
		}
	}
	if err != nil {
		// Part of a reply may be in the buffer: the stream is unusable, so
		// end the connection, as net/rpc's codec does.
		c.encBuf.Flush()
		c.Close()
		return err
	}
	return c.encBuf.Flush()
}

func (c *serverCodec) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	return c.rwc.Close()
}
