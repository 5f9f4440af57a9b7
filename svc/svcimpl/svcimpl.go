// Package svcimpl is what the code protoc-gen-go-svclab generates calls:
// the typed in-process path of each unary method (<file>_svclab.pb.go),
// which the inproc transport takes instead of a handler, and the JSON code
// the http transport reads and writes messages with (<file>_json.pb.go).
// It is public only so that generated code outside svclab's module can
// import it; hand-written code has no use for it, and its names follow the
// generator, not the other way round.
package svcimpl

import (
	"cmp"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/internal/runtime/transport/httptransport/pbjson"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
)

// Method is the typed path of one unary method: Call calls it on an
// implementation of the service with the caller's own request, and Copy
// sets the fields of the stub's response to those of the implementation's.
type Method = inproc.Method

// RegisterMethods records the typed path of a service's unary methods, by
// method name; generated code calls it from init.
func RegisterMethods(desc *grpc.ServiceDesc, methods map[string]Method) {
	inproc.RegisterMethods(desc, methods)
}

// TypeError is the error of a Method given a message of the wrong type:
// got where a want belongs.
func TypeError(got, want any) error { return inproc.TypeError(got, want) }

// NilResponse is the error of a method that returned neither a response
// nor an error.
func NilResponse(method string) error { return inproc.NilResponse(method) }

// ShallowCopy is a Method's Copy for messages whose fields the generated
// code cannot reach: it sets *dst to *src by reflection.
func ShallowCopy(dst, src any) error { return inproc.ShallowCopy(dst, src) }

// Decoder reads the JSON of one message for its generated
// DecodeProtoJSON method.
type Decoder = pbjson.Decoder

// ErrFallback is what generated JSON code returns for input it does not
// decode itself and values it does not encode itself: protojson decides
// those.
var ErrFallback = pbjson.ErrFallback

// AppendString appends s as a JSON string escaped as protojson escapes it;
// invalid UTF-8 is ErrFallback.
func AppendString(b []byte, s string) ([]byte, error) { return pbjson.AppendString(b, s) }

// AppendBytes appends v in standard base64, quoted.
func AppendBytes(b []byte, v []byte) []byte { return pbjson.AppendBytes(b, v) }

// AppendQuotedInt appends v as a quoted decimal, the JSON form of the
// 64-bit integer types.
func AppendQuotedInt(b []byte, v int64) []byte { return pbjson.AppendQuotedInt(b, v) }

// AppendQuotedUint is AppendQuotedInt for unsigned values.
func AppendQuotedUint(b []byte, v uint64) []byte { return pbjson.AppendQuotedUint(b, v) }

// AppendQuotedBool appends a bool map key: "true" or "false", quoted.
func AppendQuotedBool(b []byte, v bool) []byte { return pbjson.AppendQuotedBool(b, v) }

// AppendFloat appends v, of bits 32 or 64, as protojson does.
func AppendFloat(b []byte, v float64, bits int) []byte { return pbjson.AppendFloat(b, v, bits) }

// AppendBool appends true or false.
func AppendBool(b []byte, v bool) []byte { return pbjson.AppendBool(b, v) }

// AppendEnum appends an enum value by its name in names, or as a number
// when it has none.
func AppendEnum(b []byte, v int32, names map[int32]string) []byte {
	return pbjson.AppendEnum(b, v, names)
}

// AppendMessage appends m, a message of another Go package: through its
// generated code if it has some, else through protojson.
func AppendMessage(b []byte, m proto.Message) ([]byte, error) { return pbjson.AppendMessage(b, m) }

// AppendInt32s appends a list of int32, sint32 or sfixed32 values.
func AppendInt32s(b []byte, v []int32) []byte { return pbjson.AppendInt32s(b, v) }

// AppendInt64s appends a list of int64, sint64 or sfixed64 values.
func AppendInt64s(b []byte, v []int64) []byte { return pbjson.AppendInt64s(b, v) }

// AppendUint32s appends a list of uint32 or fixed32 values.
func AppendUint32s(b []byte, v []uint32) []byte { return pbjson.AppendUint32s(b, v) }

// AppendUint64s appends a list of uint64 or fixed64 values.
func AppendUint64s(b []byte, v []uint64) []byte { return pbjson.AppendUint64s(b, v) }

// AppendFloat32s appends a list of float values.
func AppendFloat32s(b []byte, v []float32) []byte { return pbjson.AppendFloat32s(b, v) }

// AppendFloat64s appends a list of double values.
func AppendFloat64s(b []byte, v []float64) []byte { return pbjson.AppendFloat64s(b, v) }

// AppendBools appends a list of bool values.
func AppendBools(b []byte, v []bool) []byte { return pbjson.AppendBools(b, v) }

// AppendBytesList appends a list of bytes values.
func AppendBytesList(b []byte, v [][]byte) []byte { return pbjson.AppendBytesList(b, v) }

// AppendStrings appends a list of strings.
func AppendStrings(b []byte, v []string) ([]byte, error) { return pbjson.AppendStrings(b, v) }

// SortedKeys returns m's keys in the order protojson writes map entries.
func SortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return pbjson.SortedKeys(m) }

// SortedBoolKeys is SortedKeys for bool keys: false first.
func SortedBoolKeys[V any](m map[bool]V) []bool { return pbjson.SortedBoolKeys(m) }

// MapKeyInt32 parses a map key of an int32 kind, which JSON writes as a
// string, as protojson does.
func MapKeyInt32(name []byte) (int32, error) { return pbjson.MapKeyInt32(name) }

// MapKeyInt64 parses a map key of an int64 kind.
func MapKeyInt64(name []byte) (int64, error) { return pbjson.MapKeyInt64(name) }

// MapKeyUint32 parses a map key of a uint32 kind.
func MapKeyUint32(name []byte) (uint32, error) { return pbjson.MapKeyUint32(name) }

// MapKeyUint64 parses a map key of a uint64 kind.
func MapKeyUint64(name []byte) (uint64, error) { return pbjson.MapKeyUint64(name) }

// MapKeyBool parses a bool map key.
func MapKeyBool(name []byte) (bool, error) { return pbjson.MapKeyBool(name) }
