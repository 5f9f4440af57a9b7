package jsongen_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/svclab/svclab/internal/jsongen"
)

// file is a one-message .proto of syntax syntax whose message M has the
// given fields.
func file(name, syntax string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.FileDescriptorProto {
	return &descriptorpb.FileDescriptorProto{
		Name:        proto.String(name + "/" + name + ".proto"),
		Package:     proto.String(name),
		Syntax:      proto.String(syntax),
		Dependency:  []string{"google/protobuf/struct.proto"},
		Options:     &descriptorpb.FileOptions{GoPackage: proto.String("example.com/" + name)},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("M"), Field: fields}},
	}
}

func field(name string, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{
		Name:   proto.String(name),
		Number: proto.Int32(1),
		Label:  descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		Type:   typ.Enum(),
	}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

// TestWhatGetsCode: proto3 messages get both methods; proto2 files,
// google.protobuf.NullValue fields and names that need escaping are left
// to protojson, and a file with nothing to generate gets no file.
func TestWhatGetsCode(t *testing.T) {
	quoted := field("q", descriptorpb.FieldDescriptorProto_TYPE_INT32, "")
	quoted.JsonName = proto.String(`q"`)
	for _, tc := range []struct {
		name string
		fd   *descriptorpb.FileDescriptorProto
		want bool
	}{
		{"plain", file("plain", "proto3", field("n", descriptorpb.FieldDescriptorProto_TYPE_INT32, "")), true},
		{"value", file("value", "proto3", field("v", descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, ".google.protobuf.Value")), true},
		{"proto2", file("two", "proto2", field("n", descriptorpb.FieldDescriptorProto_TYPE_INT32, "")), false},
		{"null value", file("null", "proto3", field("n", descriptorpb.FieldDescriptorProto_TYPE_ENUM, ".google.protobuf.NullValue")), false},
		{"quote in json name", file("quoted", "proto3", quoted), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &pluginpb.CodeGeneratorRequest{
				FileToGenerate: []string{tc.fd.GetName()},
				ProtoFile:      []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(structpb.File_google_protobuf_struct_proto), tc.fd},
			}
			gen, err := protogen.Options{}.New(req)
			if err != nil {
				t.Fatal(err)
			}
			if err := jsongen.Run(gen); err != nil {
				t.Fatal(err)
			}
			resp := gen.Response()
			if resp.Error != nil {
				t.Fatal(resp.GetError())
			}
			if got := len(resp.File) == 1; got != tc.want {
				t.Fatalf("generated a file: %v, want %v", got, tc.want)
			}
			if !tc.want {
				return
			}
			src := resp.File[0].GetContent()
			for _, want := range []string{"func (x *M) AppendProtoJSON(b []byte) ([]byte, error)", "func (x *M) DecodeProtoJSON(d *svcimpl.Decoder) error"} {
				if !strings.Contains(src, want) {
					t.Errorf("no %q in\n%s", want, src)
				}
			}
		})
	}
}
