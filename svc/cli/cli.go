// Package cli is the whole svclab command as a library: a module outside
// svclab's builds its own svclab, with the apps it registers through
// package svc added to the reference apps, by calling Main from its main
// function:
//
//	package main
//
//	import (
//		_ "example.com/mine/apps" // registers its apps with svc.Register
//
//		"github.com/svclab/svclab/svc/cli"
//	)
//
//	func main() { cli.Main() }
//
// The binary has the reference apps too, and every command of svclab (plan, run, up, load, capacity,
// kube render, host, ...). The deployers start the running binary again as
// `svclab host` for each group of components, so its hosts know its apps.
package cli

import "github.com/svclab/svclab/internal/cli"

// Main runs the svclab command line in os.Args, with every app registered
// so far. It returns when the command succeeded, so that main returns and
// the process exits 0; otherwise it exits the process with status 1 when
// the work failed, 2 for bad input (a flag, an argument or a spec), 99
// when load.thresholds were broken.
func Main() { cli.Main() }
