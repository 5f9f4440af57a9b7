// Command orderslab is svclab with the orders app added: every command of
// svclab (plan, run, up, load, capacity, kube render, ...), built from this
// module alone, with svclab as a dependency.
//
//	go build -o orderslab .
//	./orderslab run orders.toml
package main

import (
	_ "example.com/orders/app" // registers app.name = "orders"

	"github.com/svclab/svclab/svc/cli"
)

func main() { cli.Main() }
