// Package conformance holds the conformance suite of svclab's
// implementations in other languages: one set of cases, in its tests, run
// against every implementation of the select and rpcops apps — Go's own,
// Java's (impl/java) and Python's (impl/python) — over the grpc and http
// transports, each implementation a real host process on a loopback port,
// started with a HostConfig as a deployer starts it.
//
// The cases check what makes implementations interchangeable on the wire:
// the answers to each method (the apps' default requests and more), errors
// (codes and messages, and the http transport's status mapping both ways),
// deadlines (a deadline shorter than a slow call ends it with
// DEADLINE_EXCEEDED, on the server and across a frontend's call), metadata
// (arriving as incoming metadata and sent on as outgoing), the health
// service, and the host protocol's exit statuses. docs/LANGUAGES.md lists
// them.
//
// `make test` builds the Java and Python implementations first (`make java`,
// `make pyimpl`); run alone, the suite builds them through make. An
// implementation whose toolchain is missing (java or mvn, python3) is
// skipped with a message saying so; one that fails to build fails the suite.
package conformance
