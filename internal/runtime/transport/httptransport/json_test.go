package httptransport

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/svclab/svclab/proto/echo"
)

// TestMarshalJSONMatchesProtojson checks that the direct path writes JSON
// that means what protojson's does, and that protojson reads it back into
// an equal message.
func TestMarshalJSONMatchesProtojson(t *testing.T) {
	value, _ := structpb.NewValue(map[string]any{"a": []any{1.0, "x"}})
	msgs := []struct {
		name   string
		m      proto.Message
		direct bool // whether the direct path should take it
	}{
		{"empty", &echo.EchoRequest{}, true},
		{"bytes and ints", &echo.EchoRequest{Payload: []byte("\x00\xffhello"), SleepMicros: -1 << 40, FailCode: 7}, true},
		{"nested, repeated, escapes", &descriptorpb.DescriptorProto{
			Name: proto.String("quote\" back\\ nl\n tab\t ctl\x01 é 😀"),
			NestedType: []*descriptorpb.DescriptorProto{
				{Name: proto.String("inner")},
				{Name: proto.String(""), ReservedName: []string{"a", "b"}},
			},
			ReservedRange: []*descriptorpb.DescriptorProto_ReservedRange{{Start: proto.Int32(-3), End: proto.Int32(1 << 30)}},
		}, true},
		{"int64 and uint64", &descriptorpb.UninterpretedOption{
			PositiveIntValue: proto.Uint64(1<<64 - 1), NegativeIntValue: proto.Int64(-1 << 63),
			StringValue: []byte{}, IdentifierValue: proto.String("id"),
		}, true},
		{"float", &descriptorpb.UninterpretedOption{DoubleValue: proto.Float64(0.1)}, false},
		{"enum", &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, false},
		{"well-known", value, false},
		{"enum nested", &descriptorpb.DescriptorProto{Field: []*descriptorpb.FieldDescriptorProto{{Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum()}}}, false},
	}
	for _, tc := range msgs {
		t.Run(tc.name, func(t *testing.T) {
			got, err := marshalJSON(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if _, direct := appendMessage(nil, tc.m.ProtoReflect()); direct != tc.direct {
				t.Errorf("direct path taken: %v, want %v", direct, tc.direct)
			}
			want, err := protojson.Marshal(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("not JSON: %s: %v", got, err)
			}
			json.Unmarshal(want, &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			back := tc.m.ProtoReflect().New().Interface()
			if err := protojson.Unmarshal(got, back); err != nil {
				t.Fatalf("protojson cannot read %s: %v", got, err)
			}
			if !proto.Equal(back, tc.m) {
				t.Errorf("round trip changed the message: %v, want %v", back, tc.m)
			}
		})
	}
}

func TestMarshalJSONInvalidUTF8(t *testing.T) {
	_, err := marshalJSON(&descriptorpb.DescriptorProto{Name: proto.String("bad \xff")})
	if err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("got %v, want protojson's invalid UTF-8 error", err)
	}
}
