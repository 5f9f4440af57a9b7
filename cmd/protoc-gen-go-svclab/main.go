// Command protoc-gen-go-svclab is a protoc plugin that writes, beside the
// grpc-go stubs, the typed in-process path svclab's inproc transport takes
// for each unary method (<file>_svclab.pb.go, see internal/inprocgen) and
// the JSON code the http transport reads and writes messages with
// (<file>_json.pb.go, see internal/jsongen). The generated code imports
// only the public package github.com/svclab/svclab/svc/svcimpl, so a module
// outside svclab's generates and builds it alike. `make proto` runs it
// through buf.
//
// Install it as any Go program, at the version of svclab the module
// requires:
//
//	go install github.com/svclab/svclab/cmd/protoc-gen-go-svclab@<version>
//
// and run it after protoc-gen-go and protoc-gen-go-grpc, into the same
// directory. With buf, in buf.gen.yaml:
//
//	version: v2
//	plugins:
//	  - local: protoc-gen-go
//	    out: proto
//	    opt: paths=source_relative
//	  - local: protoc-gen-go-grpc
//	    out: proto
//	    opt: paths=source_relative
//	  - local: protoc-gen-go-svclab
//	    out: proto
//	    opt: paths=source_relative
//
// With protoc:
//
//	protoc --go_out=. --go_opt=paths=source_relative \
//	  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
//	  --go-svclab_out=. --go-svclab_opt=paths=source_relative orders.proto
//
// examples/orders is a module that does so (docs/YOUR-SYSTEM.md).
package main

import (
	"flag"
	"fmt"
	"os"

	"google.golang.org/protobuf/compiler/protogen"

	"github.com/svclab/svclab/internal/inprocgen"
	"github.com/svclab/svclab/internal/jsongen"
)

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Printf("protoc-gen-go-svclab %s (json %s)\n", inprocgen.Version, jsongen.Version)
		return
	}
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "protoc-gen-go-svclab is a protoc plugin: run it through protoc or buf (make proto), not by hand")
		os.Exit(2)
	}
	protogen.Options{ParamFunc: flag.CommandLine.Set}.Run(func(gen *protogen.Plugin) error {
		if err := inprocgen.Run(gen); err != nil {
			return err
		}
		return jsongen.Run(gen)
	})
}
