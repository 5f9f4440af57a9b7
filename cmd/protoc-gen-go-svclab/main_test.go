package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/svclab/svclab/proto/echo"
)

// plugin builds the command into a temporary directory.
func plugin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "protoc-gen-go-svclab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestPlugin speaks protoc's plugin protocol to the binary, as buf does:
// a CodeGeneratorRequest on stdin, a CodeGeneratorResponse on stdout.
func TestPlugin(t *testing.T) {
	bin := plugin(t)
	fd := echo.File_echo_echo_proto
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{fd.Path()},
		Parameter:      proto.String("paths=source_relative"),
	}
	for i := range fd.Imports().Len() {
		req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(fd.Imports().Get(i).FileDescriptor))
	}
	req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(fd))
	in, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("generates", func(t *testing.T) {
		cmd := exec.Command(bin)
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("plugin: %v", err)
		}
		var resp pluginpb.CodeGeneratorResponse
		if err := proto.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Error != nil || len(resp.File) != 1 || resp.File[0].GetName() != "echo/echo_svclab.pb.go" {
			t.Fatalf("response: error %q, files %d", resp.GetError(), len(resp.File))
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "proto", "echo", "echo_svclab.pb.go"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.File[0].GetContent() != string(want) {
			t.Error("output differs from proto/echo/echo_svclab.pb.go")
		}
	})

	t.Run("unknown parameter", func(t *testing.T) {
		bad := proto.Clone(req).(*pluginpb.CodeGeneratorRequest)
		bad.Parameter = proto.String("paths=source_relative,colour=blue")
		b, _ := proto.Marshal(bad)
		cmd := exec.Command(bin)
		cmd.Stdin = bytes.NewReader(b)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "colour") {
			t.Errorf("got err %v, stderr %q; want a failure naming the parameter", err, stderr.String())
		}
	})

	t.Run("run by hand", func(t *testing.T) {
		cmd := exec.Command(bin, "echo.proto")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "make proto") {
			t.Errorf("got %v, %q; want exit 2 pointing at make proto", err, out)
		}
	})

	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), "protoc-gen-go-svclab ") {
			t.Errorf("--version: %v, %q", err, out)
		}
	})
}
