package httptransport

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/internal/runtime/transport/httptransport/pbjson"
	"github.com/svclab/svclab/internal/spec"
)

// codec reads and writes message bodies in protojson's mapping. Both
// codecs mean the same JSON; they differ in what it costs, which is what
// deploy.http_codec makes a factor of.
type codec struct {
	marshal   func(proto.Message) ([]byte, error)
	unmarshal func([]byte, proto.Message) error
}

// Unknown fields are ignored, so that a newer client can call an older
// server.
var (
	unmarshalOpts = protojson.UnmarshalOptions{DiscardUnknown: true}
	marshalOpts   = protojson.MarshalOptions{}
)

var codecs = map[string]codec{
	// The generated code of internal/jsongen where a message has it; for
	// others (the well-known types, messages compiled elsewhere) the
	// direct encoder of json.go and protojson.
	spec.HTTPCodecFast: {
		marshal:   marshalFast,
		unmarshal: pbjson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal,
	},
	// protojson alone, as a REST gateway for protobuf services uses it.
	spec.HTTPCodecProtojson: {
		marshal:   marshalOpts.Marshal,
		unmarshal: unmarshalOpts.Unmarshal,
	},
}

// codecNamed returns the codec a ServerOptions.Codec or DialOptions.Codec
// names; empty is spec.HTTPCodecFast.
func codecNamed(name string) (codec, error) {
	if name == "" {
		name = spec.HTTPCodecFast
	}
	c, ok := codecs[name]
	if !ok {
		return codec{}, fmt.Errorf("http: unknown codec %q (known: %s)", name, strings.Join(spec.HTTPCodecs, ", "))
	}
	return c, nil
}

func marshalFast(m proto.Message) ([]byte, error) {
	if pbjson.Generated(m) {
		return pbjson.Marshal(m)
	}
	return marshalJSON(m)
}
