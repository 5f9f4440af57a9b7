// Package pbjson reads and writes protobuf messages in protojson's JSON
// mapping through code that protoc-gen-go-svclab generates for each
// message (internal/jsongen), as vtprotobuf does for the binary format: no
// reflection, one pass over the input, and numbers and strings parsed in
// place. It is the runtime that generated code calls, and the entry point
// (Marshal, Unmarshal) that falls back to protojson for every message
// without generated code, such as the well-known types.
//
// The contract is protojson's own behaviour, not a description of it.
// Generated code decodes only input it understands exactly: anything else
// (a syntax error, a duplicate field, an integer written as 1e3 or "1.0",
// nesting past protojson's recursion limit) makes it return ErrFallback,
// and Unmarshal hands the whole input to protojson, whose answer, error
// text included, is the result. Likewise Marshal gives a message to
// protojson when the generated code meets a value it will not write
// (invalid UTF-8 in a string). Output is protojson's, byte for byte, less
// the random spaces protojson inserts to keep callers from comparing text.
package pbjson

import (
	"bytes"
	"errors"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Message is a message with generated JSON code.
type Message interface {
	proto.Message
	// AppendProtoJSON appends the message as protojson writes it, or
	// returns ErrFallback.
	AppendProtoJSON(b []byte) ([]byte, error)
	// DecodeProtoJSON reads one JSON object from d into the message,
	// which is empty, or returns ErrFallback.
	DecodeProtoJSON(d *Decoder) error
}

// ErrFallback is what generated code returns for input it does not decode
// itself and values it does not encode itself: protojson decides those.
var ErrFallback = errors.New("pbjson: left to protojson")

// MarshalOptions configure Marshal. The zero value is protojson's default.
type MarshalOptions struct{}

// UnmarshalOptions configure Unmarshal.
type UnmarshalOptions struct {
	// DiscardUnknown ignores unknown fields and enum names, as
	// protojson.UnmarshalOptions.DiscardUnknown does.
	DiscardUnknown bool
}

// Generated reports whether m has generated JSON code.
func Generated(m proto.Message) bool {
	_, ok := m.(Message)
	return ok
}

// Marshal returns m in protojson's form.
func Marshal(m proto.Message) ([]byte, error) {
	if _, ok := m.(Message); !ok {
		return protojson.Marshal(m)
	}
	// Encode into a reused buffer and copy out the result: one
	// allocation of the right size, where appending to nil would grow
	// and copy a large message a dozen times.
	bp := buffers.Get().(*[]byte)
	buf, err := MarshalAppend((*bp)[:0], m)
	var out []byte
	if err == nil {
		out = bytes.Clone(buf)
	}
	if cap(buf) <= maxPooled {
		*bp = buf[:0]
		buffers.Put(bp)
	}
	return out, err
}

// buffers holds Marshal's buffers, up to maxPooled bytes each.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooled = 16 << 20

// MarshalAppend appends m in protojson's form to b.
func MarshalAppend(b []byte, m proto.Message) ([]byte, error) {
	if g, ok := m.(Message); ok {
		out, err := g.AppendProtoJSON(b)
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, ErrFallback) {
			return nil, err
		}
	}
	return protojson.MarshalOptions{}.MarshalAppend(b, m)
}

// Unmarshal reads m from b with the default options.
func Unmarshal(b []byte, m proto.Message) error { return UnmarshalOptions{}.Unmarshal(b, m) }

// Unmarshal resets m and reads it from b, as protojson.Unmarshal does.
func (o UnmarshalOptions) Unmarshal(b []byte, m proto.Message) error {
	if g, ok := m.(Message); ok {
		proto.Reset(m)
		d := Decoder{buf: b, discardUnknown: o.DiscardUnknown}
		err := g.DecodeProtoJSON(&d)
		if err == nil {
			err = d.end()
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrFallback) {
			return err
		}
	}
	return protojson.UnmarshalOptions{DiscardUnknown: o.DiscardUnknown}.Unmarshal(b, m)
}
