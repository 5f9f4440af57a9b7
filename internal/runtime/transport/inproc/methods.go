package inproc

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/runtime/transport/internal/dispatch"
)

// Method is the typed path of one unary method, as protoc-gen-go-svclab
// writes it: the calls a generated grpc.MethodHandler would make, without
// the handler's request allocation and copy.
type Method struct {
	// Call calls the method on impl, an implementation of the service,
	// with in, the caller's own request. A request of the wrong type is
	// an error (an interceptor may have swapped it), never a panic.
	Call func(impl any, ctx context.Context, in any) (any, error)
	// Copy sets the fields of dst, the stub's response, to those of src,
	// the implementation's, sharing nested values. A nil src or a type
	// mismatch is a codes.Internal error, as a failed encode is on grpc.
	Copy func(dst, src any) error
}

// typed is a Method bound to the implementation registered on a Channel.
type typed struct {
	Method
	impl any
	info grpc.UnaryServerInfo
	last atomic.Pointer[lastCall] // this method under a caller's name
}

var (
	generatedMu sync.RWMutex
	// generatedMethods is keyed by the descriptor's address: a copied or
	// hand-built ServiceDesc may pair the name with another handler type,
	// and then takes the handler path.
	generatedMethods = map[*grpc.ServiceDesc]map[string]Method{}
)

// RegisterMethods records the typed path of a service's unary methods, by
// method name. Generated code calls it from init; a Channel uses the
// methods for implementations registered with the same desc.
func RegisterMethods(desc *grpc.ServiceDesc, methods map[string]Method) {
	generatedMu.Lock()
	defer generatedMu.Unlock()
	generatedMethods[desc] = methods
}

func generated(desc *grpc.ServiceDesc) map[string]Method {
	generatedMu.RLock()
	defer generatedMu.RUnlock()
	return generatedMethods[desc]
}

// TypeError is the error of a Method given a message of the wrong type:
// got where a want belongs.
//
// It and NilResponse stay out of line so that the generated Call and Copy,
// which run on every call, do not carry the formatting of a rare error.
//
//go:noinline
func TypeError(got, want any) error { return dispatch.TypeError(got, want) }

// NilResponse is the error of a method that returned neither a response
// nor an error; grpc fails such a call when it encodes the response.
//
//go:noinline
func NilResponse(method string) error {
	return status.Errorf(codes.Internal, "inproc: %s returned a nil response and no error", method)
}

// ShallowCopy is a Method's Copy for messages whose fields generated code
// outside their package cannot reach: it sets *dst to *src by reflection.
func ShallowCopy(dst, src any) error { return dispatch.ShallowCopy(dst, src) }
