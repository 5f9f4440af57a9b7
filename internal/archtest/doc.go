// Package archtest guards svclab's package graph. It holds no code, only
// tests: the committed godeps.txt at the repository root lists every
// package's direct imports, and the test fails when the graph changes
// without that file, so a new dependency shows in review; it also fails
// when an import climbs the layers (see layers in archtest_test.go and
// docs/ARCHITECTURE.md). api.txt at the root lists the public Go API (the
// packages under svc/, resolved through their aliases), checked the same
// way, and the reference apps may import only that API and their protobuf
// packages.
package archtest
