// Command protoc-gen-go-svclab is a protoc plugin that writes, beside the
// grpc-go stubs, the typed in-process path svclab's inproc transport takes
// for each unary method (see internal/inprocgen). `make proto` runs it
// through buf.
package main

import (
	"flag"
	"fmt"
	"os"

	"google.golang.org/protobuf/compiler/protogen"

	"github.com/svclab/svclab/internal/inprocgen"
)

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println("protoc-gen-go-svclab", inprocgen.Version)
		return
	}
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "protoc-gen-go-svclab is a protoc plugin: run it through protoc or buf (make proto), not by hand")
		os.Exit(2)
	}
	protogen.Options{ParamFunc: flag.CommandLine.Set}.Run(inprocgen.Run)
}
