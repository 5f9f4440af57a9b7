// Command benchserver is the HTTP server that scripts/bench/load-vs-peers.sh
// points svclab load, wrk and hey at: net/http answering every request
// with a two-byte body, so that what differs between runs is the
// generator.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The script reads the address from the first line of output.
	println(lis.Addr().String())
	body := []byte("ok")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	})
	log.Fatal(http.Serve(lis, h))
}
