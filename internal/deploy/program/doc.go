// Package program runs any program as a component: app.name = "exec",
// whose [app.components.<name>] tables describe programs (a binary,
// `python app.py`, `java -jar`, nginx, Redis) that svclab starts, wires,
// measures and stops, as it does its own hosts.
//
// The package owns the app's keys (config.go: command, protocol, health,
// calls, env, dir, start_timeout, image, port), their templates
// (template.go: {listen}, {port}, {addr:<name>}), the topology
// (resolve.go: one process per program, over the protocol each speaks;
// what cannot apply to a program is refused at its key), and the
// deployment (deploy.go, process.go): each program gets its address (a
// free loopback port, a unix socket's path with deploy.network = "unix",
// or a port on its machine on the deploy.Network a deployer with machines
// hands over: network.go) and its callees' addresses through its
// arguments and environment,
// starts in a process group of its own once its callees are healthy,
// with a parent-death signal so that it dies with svclab, and must pass
// its health check (internal/deploy/probe) within its start timeout; it
// is sampled with what it forked (procstat.Tree) and stopped with
// SIGTERM, then SIGKILL to its group. Every program carries its svclab's
// mark in its environment (OwnerEnv), so that Sweep, which every Deploy
// runs first, kills what a svclab killed with -9 left.
//
// The local deployer hands an exec topology to Deploy (with the netns
// deployer's network, when it runs the local deployer) and asks
// CheckMachine before anything starts; the package registers the app.
package program
