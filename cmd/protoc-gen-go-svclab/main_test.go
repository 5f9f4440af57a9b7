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
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/svclab/svclab/proto/boutique"
	"github.com/svclab/svclab/proto/chain"
	"github.com/svclab/svclab/proto/echo"
	"github.com/svclab/svclab/proto/kinds"
	"github.com/svclab/svclab/proto/rpcops"
	"github.com/svclab/svclab/proto/selector"
	"github.com/svclab/svclab/proto/shop"
	"github.com/svclab/svclab/proto/synth"
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
	req := request(echo.File_echo_echo_proto, chain.File_chain_chain_proto, kinds.File_kinds_kinds_proto,
		rpcops.File_rpcops_rpcops_proto, selector.File_selector_selector_proto, shop.File_shop_shop_proto,
		boutique.File_boutique_boutique_proto, synth.File_synth_synth_proto)
	in, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}

	// The committed files are what the plugin writes today: a change to a
	// generator or a .proto without `make proto` fails here.
	t.Run("committed files up to date", func(t *testing.T) {
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
		if resp.Error != nil {
			t.Fatalf("plugin error: %s", resp.GetError())
		}
		root := filepath.Join("..", "..", "proto")
		var onDisk []string
		for _, pattern := range []string{"*_svclab.pb.go", "*_json.pb.go"} {
			m, err := filepath.Glob(filepath.Join(root, "*", pattern))
			if err != nil {
				t.Fatal(err)
			}
			onDisk = append(onDisk, m...)
		}
		written := map[string]bool{}
		for _, f := range resp.File {
			written[filepath.Join(root, f.GetName())] = true
			want, err := os.ReadFile(filepath.Join(root, f.GetName()))
			if err != nil {
				t.Errorf("%s: %v (run make proto)", f.GetName(), err)
				continue
			}
			if f.GetContent() != string(want) {
				t.Errorf("proto/%s is stale: run make proto", f.GetName())
			}
			// A module outside svclab's could not build an import of an
			// internal package.
			if strings.Contains(f.GetContent(), `"github.com/svclab/svclab/internal/`) {
				t.Errorf("proto/%s imports an internal package of svclab", f.GetName())
			}
		}
		for _, f := range onDisk {
			if !written[f] {
				t.Errorf("%s is no longer generated: run make proto and remove it", f)
			}
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
