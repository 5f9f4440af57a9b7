// Package svc is svclab's public API for Go services: through it a Go
// module, inside this repository or outside it, registers its own apps,
// whose components implement its own protobuf services. svclab then
// places, wires, deploys, loads and measures them as it does its reference
// apps (apps/*, the first users of this package).
//
// An app registers itself from an init function:
//
//	func init() {
//		svc.Register(&svc.App{
//			Name:      "mine",
//			Summary:   "one line for listings",
//			NewConfig: func() svc.Config { return &Config{Workers: 4} },
//		})
//	}
//
// and a main package built with package cli (github.com/svclab/svclab/svc/cli)
// is the whole svclab command with that app added. A component reaches the
// services it calls only through the grpc.ClientConnInterface values in its
// Deps, so the same code runs whether its callees share its process (the
// inproc transport) or sit behind grpc, http, netrpc or protorpc. The
// protoc plugin cmd/protoc-gen-go-svclab generates, beside the grpc-go
// stubs, the typed in-process path the inproc transport takes. docs/APPS.md
// and docs/YOUR-SYSTEM.md walk through an app from nothing to a report.
//
// The names here are aliases of svclab's internal component model, so an
// app written against them is the same to svclab as one written inside it.
package svc

import (
	"context"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// App is an application: a named set of components whose shape follows
// from the app's config. Its fields are Name (the value of app.name in a
// spec), Summary (one line for listings) and NewConfig, which returns a
// pointer to the app's config struct holding the defaults; the spec's [app]
// table (minus name) is decoded into it strictly, and each host receives it
// as JSON, so the struct needs both toml and json tags.
type App = runtime.App

// Config is an app's configuration, from which its components follow:
// Validate checks the decoded values (a problem with one key as KeyErrorf,
// several joined with errors.Join, so that each points at its spec line),
// Components lists the components in call order from the entry, Entry names
// the component clients call, and Requests returns the calls of the entry
// that drive the app when the spec's [load] gives no request of its own.
//
// A Config may also be a BackingUser or an IngressUser.
type Config = runtime.Config

// Component is one implementation of one protobuf service: Name is how
// placements refer to it, Service the grpc-go generated service descriptor
// it implements, Deps the names of the components it calls, and New builds
// the implementation (a value Service.HandlerType accepts) given a
// connection for every name in Deps. Calls through those connections must
// not be made before New returns: callees may still be starting. The
// implementation of an entry component may also be a WebHandler.
type Component = runtime.Component

// Deps maps a callee's component name to the connection that reaches it;
// Deps.Conn(name) returns it and panics when the component did not declare
// name, a programming error.
type Deps = runtime.Deps

// Request is one call of an app's entry component, which the load
// generator sends: Name labels the operation in results, Method is the full
// method name ("/package.Service/Method", also the HTTP/JSON gateway's
// route), Message the request (shared: read-only), NewResponse an empty
// response, and Check, when not nil, whether a response is a correct
// answer.
type Request = runtime.Request

// Register makes an app available by name to specs (app.name); call it
// from an init function. It panics on a duplicate name, a programming
// error.
func Register(a *App) { runtime.Register(a) }

// KeyErrorf returns the error of one key of the [app] table (e.g. "hops",
// or "services.cart.calls"), which svclab reports at the key's file and
// line in the spec. Config.Validate returns it.
func KeyErrorf(key, format string, args ...any) error {
	return runtime.KeyErrorf(key, format, args...)
}

// DidYouMean returns ` (did you mean "x"?)` when one of known is within two
// edits of got, else ` (known: a, b, …)`: the tail of a KeyErrorf message
// about a value that must be one of a few names.
func DidYouMean(got string, known []string) string { return spec.DidYouMean(got, known) }

// Duration is a time.Duration that a spec writes as a string such as
// "30s"; use it for a duration key of an app's config.
type Duration = spec.Duration

// ByteSize is a number of bytes that a spec writes as a string with a unit
// ("16MiB", "16MB"); use it for a size key of an app's config.
type ByteSize = spec.ByteSize

// Sleep waits micros microseconds or until ctx ends, and then returns the
// context's error as a gRPC status: the sleep_micros knob of the reference
// apps, with which tests check that deadlines and cancellation reach every
// hop. A cancelled sleep is logged on the host's stderr naming component.
func Sleep(ctx context.Context, component string, micros int64) error {
	return runtime.Sleep(ctx, component, micros)
}

// Backing is a backing service (a database) an app's components use: Name
// is how they find its address (BackingAddr), Kind is BackingPostgres or
// BackingRedis, and Setup is run on it before every run (SQL for
// postgres). The deployer starts it and restores it before each run.
type Backing = runtime.Backing

// Kinds of backing service.
const (
	// BackingPostgres is a PostgreSQL server; its address is a libpq
	// connection string that pgx accepts.
	BackingPostgres = runtime.BackingPostgres
	// BackingRedis is a Redis server; its address is a URL that go-redis's
	// ParseURL accepts. Its Setup must be empty.
	BackingRedis = runtime.BackingRedis
)

// BackingUser is a Config whose components need backing services, which
// its Backing method lists. A deployer that cannot run one of them refuses
// the topology before anything starts.
type BackingUser = runtime.BackingUser

// BackingAddr returns the address of the backing service name, as the
// deployer passed it to this process; a component's New calls it.
func BackingAddr(name string) (string, error) { return runtime.BackingAddr(name) }

// IngressUser is a Config that asks for an ingress proxy in front of the
// HTTP/JSON gateway (its IngressName, e.g. "nginx"; "" for none).
type IngressUser = runtime.IngressUser

// WebHandler is an entry component's implementation that also serves pages
// of its own over HTTP: the host mounts it on the HTTP/JSON gateway, where
// it answers every path that is not a method's route.
type WebHandler = runtime.WebHandler

// WebRouter is a WebHandler that names the route a request is for (a
// net/http pattern such as "GET /product/{id}"), so that its pages are
// counted and traced per route rather than per URL.
type WebRouter = runtime.WebRouter
