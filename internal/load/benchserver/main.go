// Command benchserver is the server that scripts/bench/load-vs-peers.sh
// and scripts/bench/pacer.sh point svclab load, wrk, hey and vegeta at:
// net/http answering every request with a two-byte body, or with -grpc
// grpc-go serving the standard health service, so that what differs
// between runs is the generator.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	useGRPC := flag.Bool("grpc", false, "serve grpc.health.v1.Health instead of HTTP/1.1")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The script reads the address from the first line of output.
	println(lis.Addr().String())
	if *useGRPC {
		s := grpc.NewServer()
		grpc_health_v1.RegisterHealthServer(s, health.NewServer())
		log.Fatal(s.Serve(lis))
	}
	body := []byte("ok")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})
	log.Fatal(http.Serve(lis, h))
}
