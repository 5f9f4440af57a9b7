// Command svclab deploys microservice architecture variants, drives them with
// load and reports what each choice costs. It is svc/cli.Main with the
// reference apps (apps/*): a module of one's own builds the same command
// with its own apps added (docs/YOUR-SYSTEM.md).
package main

import "github.com/svclab/svclab/svc/cli"

func main() { cli.Main() }
