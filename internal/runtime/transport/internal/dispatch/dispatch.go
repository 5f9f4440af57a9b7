// Package dispatch holds what the non-grpc transports share on the server
// side: a table from full method name to the registered implementation and
// its grpc.MethodDesc handler, interceptor chaining, and the grpc-timeout
// encoding used to carry deadlines.
package dispatch

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Method is one registered unary method.
type Method struct {
	// FullMethod is "/package.Service/Method", as grpc spells it.
	FullMethod string
	Service    *grpc.ServiceDesc
	Impl       any
	Handler    grpc.MethodHandler
}

// Table maps full method names to their handlers. The zero value is ready.
// Registration normally happens before serving, but Table does not enforce
// that: a registration replaces the method map with an extended copy, so
// a lookup, on every call, is one atomic load and takes no lock.
type Table struct {
	mu       sync.Mutex // serialises registrations
	methods  atomic.Pointer[map[string]*Method]
	services map[string]grpc.ServiceInfo
	// OnRegister, when set, is called for every service as it is registered,
	// so a transport can prepare per-message state (e.g. gob types).
	OnRegister func(desc *grpc.ServiceDesc)
}

// RegisterService implements grpc.ServiceRegistrar. Streaming methods are
// recorded in the service info but not callable: calls to them fail with
// codes.Unimplemented, as they would for an unknown method.
func (t *Table) RegisterService(desc *grpc.ServiceDesc, impl any) {
	if impl != nil && desc.HandlerType != nil {
		// grpc.Server makes the same check; doing it here keeps the
		// transports interchangeable in what they accept.
		if !implements(impl, desc.HandlerType) {
			panic(fmt.Sprintf("dispatch: RegisterService found the handler of type %T that does not satisfy %s", impl, desc.ServiceName))
		}
	}
	if t.OnRegister != nil {
		t.OnRegister(desc)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.services == nil {
		t.services = map[string]grpc.ServiceInfo{}
	}
	if _, dup := t.services[desc.ServiceName]; dup {
		panic("dispatch: RegisterService found duplicate service registration for " + desc.ServiceName)
	}
	methods := map[string]*Method{}
	if old := t.methods.Load(); old != nil {
		for k, v := range *old {
			methods[k] = v
		}
	}
	info := grpc.ServiceInfo{Metadata: desc.Metadata}
	for i := range desc.Methods {
		md := &desc.Methods[i]
		full := FullMethod(desc.ServiceName, md.MethodName)
		methods[full] = &Method{FullMethod: full, Service: desc, Impl: impl, Handler: md.Handler}
		info.Methods = append(info.Methods, grpc.MethodInfo{Name: md.MethodName})
	}
	t.methods.Store(&methods)
	for _, sd := range desc.Streams {
		info.Methods = append(info.Methods, grpc.MethodInfo{Name: sd.StreamName, IsClientStream: sd.ClientStreams, IsServerStream: sd.ServerStreams})
	}
	t.services[desc.ServiceName] = info
}

// GetServiceInfo reports the registered services, as grpc.Server does.
func (t *Table) GetServiceInfo() map[string]grpc.ServiceInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]grpc.ServiceInfo, len(t.services))
	for k, v := range t.services {
		out[k] = v
	}
	return out
}

// Lookup returns the method registered under fullMethod, or nil.
func (t *Table) Lookup(fullMethod string) *Method {
	if m := t.methods.Load(); m != nil {
		return (*m)[fullMethod]
	}
	return nil
}

// ChainServer folds interceptors into one, the first outermost. It returns
// nil for none, so handlers take their direct path.
func ChainServer(ints []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	switch len(ints) {
	case 0:
		return nil
	case 1:
		return ints[0]
	}
	ints = append([]grpc.UnaryServerInterceptor(nil), ints...)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return serverStep(ints, 0, info, handler)(ctx, req)
	}
}

func serverStep(ints []grpc.UnaryServerInterceptor, i int, info *grpc.UnaryServerInfo, final grpc.UnaryHandler) grpc.UnaryHandler {
	if i == len(ints) {
		return final
	}
	return func(ctx context.Context, req any) (any, error) {
		return ints[i](ctx, req, info, serverStep(ints, i+1, info, final))
	}
}

// ChainClient folds client interceptors into one, the first outermost. It
// returns nil for none.
func ChainClient(ints []grpc.UnaryClientInterceptor) grpc.UnaryClientInterceptor {
	switch len(ints) {
	case 0:
		return nil
	case 1:
		return ints[0]
	}
	ints = append([]grpc.UnaryClientInterceptor(nil), ints...)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return clientStep(ints, 0, invoker)(ctx, method, req, reply, cc, opts...)
	}
}

func clientStep(ints []grpc.UnaryClientInterceptor, i int, final grpc.UnaryInvoker) grpc.UnaryInvoker {
	if i == len(ints) {
		return final
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		return ints[i](ctx, method, req, reply, cc, clientStep(ints, i+1, final), opts...)
	}
}

// EncodeTimeout writes d in the grpc-timeout header format: at most eight
// digits and a unit, rounding up so the server never sees a later deadline
// than the client's.
func EncodeTimeout(d time.Duration) string {
	if d <= 0 {
		return "0n"
	}
	const maxDigits = 99999999
	units := []struct {
		d time.Duration
		u string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}, {time.Hour, "H"}}
	for _, u := range units {
		n := (d + u.d - 1) / u.d
		if n <= maxDigits {
			return strconv.FormatInt(int64(n), 10) + u.u
		}
	}
	return strconv.Itoa(maxDigits) + "H"
}

// DecodeTimeout parses a grpc-timeout header value.
func DecodeTimeout(s string) (time.Duration, error) {
	if len(s) < 2 || len(s) > 9 {
		return 0, fmt.Errorf("timeout %q: bad length", s)
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("timeout %q: bad number", s)
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 'n':
		unit = time.Nanosecond
	case 'u':
		unit = time.Microsecond
	case 'm':
		unit = time.Millisecond
	case 'S':
		unit = time.Second
	case 'M':
		unit = time.Minute
	case 'H':
		unit = time.Hour
	default:
		return 0, fmt.Errorf("timeout %q: bad unit", s)
	}
	return time.Duration(n) * unit, nil
}

// FullMethod joins a service and a method name as grpc spells the pair,
// "/package.Service/Method"; SplitMethod undoes it.
func FullMethod(service, method string) string { return "/" + service + "/" + method }

// SplitMethod splits "/pkg.Service/Method" into its parts.
func SplitMethod(full string) (service, method string, ok bool) {
	if !strings.HasPrefix(full, "/") {
		return "", "", false
	}
	i := strings.LastIndexByte(full, '/')
	if i <= 0 {
		return "", "", false
	}
	return full[1:i], full[i+1:], true
}

// implements reports whether impl satisfies the interface that
// handlerType, a pointer to an interface, points to.
func implements(impl any, handlerType any) bool {
	ht := reflect.TypeOf(handlerType)
	if ht == nil || ht.Kind() != reflect.Pointer || ht.Elem().Kind() != reflect.Interface {
		return true
	}
	return reflect.TypeOf(impl).Implements(ht.Elem())
}

// StatusError gives err the gRPC status grpc-go's server would give it: a
// status error stays as it is, a context error maps to Canceled or
// DeadlineExceeded, anything else becomes Unknown with err's text.
func StatusError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.FromContextError(err).Err()
}

// ShallowCopy sets *dst to *src. Both must be non-nil pointers to the same
// type, which they are unless an interceptor swapped a message for another
// type; the error says so with codes.Internal.
func ShallowCopy(dst, src any) error {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Kind() != reflect.Pointer || dv.Type() != sv.Type() || dv.IsNil() || sv.IsNil() {
		return TypeError(src, dst)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}

// TypeError is the codes.Internal error for a message of the wrong type:
// got where a want belongs.
func TypeError(got, want any) error {
	return status.Errorf(codes.Internal, "cannot pass a %T as a %T", got, want)
}

// Decoder is the dec func a grpc.MethodHandler takes, for a request that is
// already a message: Decode shallow-copies it into the handler's own. A
// closure over the request would be an allocation per call; pooled
// Decoders, their func bound once, are not.
type Decoder struct {
	src any
	// Decode is the func to hand to the MethodHandler. A nil source leaves
	// the handler's message as it is, zero.
	Decode func(any) error
}

var decoders = sync.Pool{New: func() any {
	d := new(Decoder)
	d.Decode = func(in any) error {
		if d.src == nil {
			return nil
		}
		return ShallowCopy(in, d.src)
	}
	return d
}}

// NewDecoder returns a pooled Decoder for src. Release it once the handler
// has returned: a handler calls dec before then or never.
func NewDecoder(src any) *Decoder {
	d := decoders.Get().(*Decoder)
	d.src = src
	return d
}

// Release returns d to the pool.
func (d *Decoder) Release() {
	d.src = nil
	decoders.Put(d)
}
