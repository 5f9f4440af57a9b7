// Command protoc-gen-go-svclab is a protoc plugin that writes, beside the
// grpc-go stubs, the typed in-process path svclab's inproc transport takes
// for each unary method (<file>_svclab.pb.go, see internal/inprocgen) and
// the JSON code the http transport reads and writes messages with
// (<file>_json.pb.go, see internal/jsongen). `make proto` runs it through
// buf.
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
