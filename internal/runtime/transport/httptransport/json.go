package httptransport

import (
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/svclab/svclab/internal/runtime/transport/httptransport/pbjson"
)

// marshalJSON writes m in protojson's form for the fast codec when m has
// no generated code (package pbjson). Messages built of strings,
// bytes, booleans, integers, and nested or repeated messages of the same
// take a direct path that is some three times faster than
// protojson.Marshal, which matters for small calls: it is the one cost
// this transport adds to bare net/http with encoding/json. Anything else
// (enums, floats, maps, well-known types, extensions, invalid UTF-8) goes
// to protojson, so the JSON always means what protojson's would. Field
// order may differ from protojson's, which JSON does not care about.
func marshalJSON(m proto.Message) ([]byte, error) {
	n := proto.Size(m)
	buf := make([]byte, 0, n+n/3+64) // base64 grows bytes by a third
	if b, ok := appendMessage(buf, m.ProtoReflect()); ok {
		return b, nil
	}
	return marshalOpts.MarshalAppend(buf[:0], m)
}

// appendMessage appends m as a JSON object, or reports false if m has a
// field the direct path does not handle. It walks the descriptor's fields
// rather than m.Range, whose callback would cost allocations per call.
func appendMessage(b []byte, m protoreflect.Message) ([]byte, bool) {
	md := m.Descriptor()
	if wellKnown(md) || md.ExtensionRanges().Len() > 0 {
		return b, false // own JSON forms; extensions Fields does not list
	}
	fields := md.Fields()
	first := true
	b = append(b, '{')
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		if fd.IsMap() {
			return b, false
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b, _ = pbjson.AppendString(b, fd.JSONName()) // descriptors hold valid UTF-8
		b = append(b, ':')
		v := m.Get(fd)
		ok := true
		if fd.IsList() {
			l := v.List()
			b = append(b, '[')
			for i := 0; i < l.Len() && ok; i++ {
				if i > 0 {
					b = append(b, ',')
				}
				b, ok = appendValue(b, fd, l.Get(i))
			}
			b = append(b, ']')
		} else {
			b, ok = appendValue(b, fd, v)
		}
		if !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

func appendValue(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		b, err := pbjson.AppendString(b, v.String())
		return b, err == nil // invalid UTF-8: protojson reports the error
	case protoreflect.BytesKind:
		return pbjson.AppendBytes(b, v.Bytes()), true
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, v.Int(), 10), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return pbjson.AppendQuotedInt(b, v.Int()), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return pbjson.AppendQuotedUint(b, v.Uint()), true
	case protoreflect.MessageKind:
		return appendMessage(b, v.Message())
	}
	return b, false // enums, floats, groups
}

// wellKnown reports whether protojson gives md's messages a JSON form other
// than an object of their fields.
func wellKnown(md protoreflect.MessageDescriptor) bool {
	if md.ParentFile() == nil || md.ParentFile().Package() != "google.protobuf" {
		return false
	}
	switch md.Name() {
	case "Any", "Timestamp", "Duration", "Struct", "Value", "ListValue", "FieldMask", "Empty",
		"DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value",
		"BoolValue", "StringValue", "BytesValue":
		return true
	}
	return false
}
