package inprocgen_test

import (
	"testing"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/svclab/svclab/internal/inprocgen"
)

func generate(t *testing.T, req *pluginpb.CodeGeneratorRequest) map[string]string {
	t.Helper()
	gen, err := protogen.Options{}.New(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := inprocgen.Run(gen); err != nil {
		t.Fatal(err)
	}
	resp := gen.Response()
	if resp.Error != nil {
		t.Fatalf("generator error: %s", resp.GetError())
	}
	out := map[string]string{}
	for _, f := range resp.File {
		out[f.GetName()] = f.GetContent()
	}
	return out
}

// TestSkips: a file with no service, or only streaming methods, gets no
// file at all.
func TestSkips(t *testing.T) {
	stream := true
	fd := &descriptorpb.FileDescriptorProto{
		Name:        proto.String("x/x.proto"),
		Package:     proto.String("x"),
		Syntax:      proto.String("proto3"),
		Options:     &descriptorpb.FileOptions{GoPackage: proto.String("example.com/x")},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("M")}},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("Streamer"),
			Method: []*descriptorpb.MethodDescriptorProto{{
				Name:            proto.String("Watch"),
				InputType:       proto.String(".x.M"),
				OutputType:      proto.String(".x.M"),
				ServerStreaming: &stream,
			}},
		}},
	}
	noService := &descriptorpb.FileDescriptorProto{
		Name:        proto.String("y/y.proto"),
		Package:     proto.String("y"),
		Syntax:      proto.String("proto3"),
		Options:     &descriptorpb.FileOptions{GoPackage: proto.String("example.com/y")},
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("M")}},
	}
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{"x/x.proto", "y/y.proto"},
		ProtoFile:      []*descriptorpb.FileDescriptorProto{fd, noService},
	}
	if got := generate(t, req); len(got) != 0 {
		t.Errorf("generated %v, want nothing", got)
	}
}
