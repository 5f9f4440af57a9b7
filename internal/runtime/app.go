// Package runtime is svclab's component model: the registry of apps and their
// components, placement resolution against a spec, and the host that runs one
// group of components in one process.
//
// A component is one implementation of one protobuf service. It reaches the
// services it depends on only through the grpc.ClientConnInterface values the
// host injects, so the same code runs whether its peers share its process
// (the inproc transport) or sit behind grpc, http, netrpc or protorpc.
package runtime

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/internal/registry"
	"github.com/svclab/svclab/internal/spec"
)

// App is a reference application: a named set of components whose shape
// follows from the app's config.
type App struct {
	// Name is the value of app.name in a spec.
	Name string
	// Summary is one line for listings and docs.
	Summary string
	// NewConfig returns a pointer to the app's config struct holding the
	// defaults. The spec's [app] table (minus name) is decoded into it
	// strictly, and the host receives it as JSON, so the struct needs both
	// toml and json tags.
	NewConfig func() Config
}

// Placer is a Config whose components are not Go code (the exec app's
// programs, internal/deploy/program): Resolve asks it for the topology,
// in place of the component model's placement. Its errors name file,
// line and key.
type Placer interface {
	// Place resolves [deploy] against the config. When the config has
	// mistakes (valid is false: [app]'s errors are reported apart), it
	// checks only what they cannot make wrong, and returns with its
	// errors the topology that the others check against (a deployer's
	// hosts, this machine's commands) when its groups are known, as
	// ResolvePartly does.
	Place(s *spec.Spec, valid bool) (*Topology, error)
}

// Noter is a Config with notices about itself: settings that are not
// mistakes but that a user should hear of before a run (synth's services
// that no request reaches). Ask through Notices.
type Noter interface {
	Notices() []string
}

// Notices are cfg's notices (Noter), or none.
func Notices(cfg Config) []string {
	if n, ok := cfg.(Noter); ok {
		return n.Notices()
	}
	return nil
}

// Config is an app's configuration, from which its components follow.
type Config interface {
	// Validate checks the values after decoding. Problems with one key are
	// returned as *spec.KeyError (see KeyErrorf), several joined with
	// errors.Join, so they can point at the spec line.
	Validate() error
	// Components lists the app's components, in call order from the entry.
	Components() []Component
	// Entry names the component clients call.
	Entry() string
	// Requests returns the requests that drive the app as configured, for
	// a load generator that is given no request of its own. Each is a call
	// of the entry component.
	Requests() []Request
}

// KeyErrorf returns a *spec.KeyError about key of the [app] table (e.g.
// "hops"), which Resolve locates at the key's line in the spec.
func KeyErrorf(key, format string, args ...any) error {
	return &spec.KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Component is one implementation of one service.
type Component struct {
	// Name is how placements refer to the component, e.g. "hop2".
	Name string
	// Service is the grpc-go generated service descriptor the component
	// implements.
	Service *grpc.ServiceDesc
	// Deps names the components this one calls.
	Deps []string
	// New builds the implementation (a value Service.HandlerType accepts),
	// given a client connection for every name in Deps. Calls through deps
	// must not be made before New returns: peers may still be starting.
	New func(ctx context.Context, deps Deps) (any, error)
}

// Deps maps a dependency's component name to the connection that reaches it.
type Deps map[string]grpc.ClientConnInterface

// Conn returns the connection to component name; it panics when the
// component did not declare name in Deps, which is a programming error.
func (d Deps) Conn(name string) grpc.ClientConnInterface {
	c, ok := d[name]
	if !ok {
		panic("runtime: no connection to undeclared dependency " + name)
	}
	return c
}

// Request is one call of an app's entry component.
type Request struct {
	// Name labels the operation in results, e.g. "call" or "movie".
	Name string
	// Method is the full method name, "/package.Service/Method". It is also
	// the path of the HTTP/JSON gateway route (POST).
	Method string
	// Message is the request. Treat it as read-only: it is shared.
	Message proto.Message
	// NewResponse returns an empty response message for the call.
	NewResponse func() proto.Message
	// Check reports whether resp is a correct answer to Message; nil means
	// any response is accepted.
	Check func(resp proto.Message) error
}

// JSON is the request as the HTTP/JSON gateway takes it (protojson).
func (r Request) JSON() []byte {
	b, err := protojson.Marshal(r.Message)
	if err != nil {
		// protojson fails only on invalid UTF-8 or unset required fields,
		// which the apps' request builders never produce.
		panic(fmt.Sprintf("runtime: request %s: protojson: %v", r.Name, err))
	}
	return b
}

// Invoke calls the request's method on cc and checks the answer.
func (r Request) Invoke(ctx context.Context, cc grpc.ClientConnInterface, opts ...grpc.CallOption) (proto.Message, error) {
	resp := r.NewResponse()
	if err := cc.Invoke(ctx, r.Method, r.Message, resp, opts...); err != nil {
		return nil, err
	}
	if r.Check != nil {
		if err := r.Check(resp); err != nil {
			return resp, fmt.Errorf("%s: wrong answer: %w", r.Name, err)
		}
	}
	return resp, nil
}

var apps = registry.New[*App]("app")

// Register makes an app available by name; apps call it from init. It
// panics on a duplicate name, a programming error.
func Register(a *App) { apps.Register(a.Name, a) }

// Lookup returns the app registered under name.
func Lookup(name string) (*App, error) { return apps.Lookup(name) }

// Apps lists the registered app names, sorted.
func Apps() []string { return apps.Names() }
