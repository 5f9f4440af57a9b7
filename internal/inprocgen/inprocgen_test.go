package inprocgen_test

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/svclab/svclab/internal/inprocgen"
	"github.com/svclab/svclab/proto/chain"
	"github.com/svclab/svclab/proto/echo"
	"github.com/svclab/svclab/proto/rpcops"
	"github.com/svclab/svclab/proto/selector"
)

// request is the CodeGeneratorRequest buf sends for files, rebuilt from
// the descriptors compiled into the generated packages (which carry the
// go_package buf's managed mode set).
func request(files ...protoreflect.FileDescriptor) *pluginpb.CodeGeneratorRequest {
	req := &pluginpb.CodeGeneratorRequest{Parameter: proto.String("paths=source_relative")}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		for i := range fd.Imports().Len() {
			add(fd.Imports().Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(fd))
	}
	for _, fd := range files {
		add(fd)
		req.FileToGenerate = append(req.FileToGenerate, fd.Path())
	}
	return req
}

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

// TestCommittedFilesUpToDate regenerates the project's _svclab.pb.go files
// and compares them with the committed ones: a change to the generator or
// a .proto without `make proto` fails here.
func TestCommittedFilesUpToDate(t *testing.T) {
	got := generate(t, request(echo.File_echo_echo_proto, chain.File_chain_chain_proto, rpcops.File_rpcops_rpcops_proto, selector.File_selector_selector_proto))
	root := filepath.Join("..", "..", "proto")
	onDisk, err := filepath.Glob(filepath.Join(root, "*", "*_svclab.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(onDisk) {
		t.Errorf("generator wrote %d files, proto/ holds %d: %v", len(got), len(onDisk), onDisk)
	}
	for name, content := range got {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%s: %v (run make proto)", name, err)
			continue
		}
		if string(b) != content {
			t.Errorf("proto/%s is stale: run make proto", name)
		}
	}
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
