package pbjson

import "google.golang.org/protobuf/proto"

// DecodeFast decodes b into m with generated code alone, reporting
// ErrFallback where Unmarshal would hand b to protojson.
func DecodeFast(b []byte, m Message, o UnmarshalOptions) error {
	proto.Reset(m)
	d := Decoder{buf: b, discardUnknown: o.DiscardUnknown}
	if err := m.DecodeProtoJSON(&d); err != nil {
		return err
	}
	return d.end()
}
