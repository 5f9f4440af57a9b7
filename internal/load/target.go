package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A Target is what the generator drives: the operations one iteration runs.
// NewTarget builds one from a Config; callers that already hold a client
// (a grpc.ClientConnInterface over any svclab transport, or any function)
// build one with GRPCOp and FuncOp.
type Target struct {
	// Ops are run in order each iteration, or, when Weighted, one of them
	// picked by Weight.
	Ops      []Op
	Weighted bool
	// Flow, when not empty, records each iteration as one more operation of
	// kind "flow" under this name.
	Flow string
	// Close releases connections; nil when there is nothing to release.
	Close func() error
}

// An Op is one kind of request.
type Op struct {
	// Name is the operation name in the results.
	Name string
	// Weight is the relative frequency in a weighted target.
	Weight float64
	// Do sends one request and waits for its answer. It calls s.MarkSent
	// once the request is about to go on the wire (after waiting for a free
	// connection, say), so that the wait counts in latency but not in
	// service time; when it does not, the call is the send. Do must give up
	// after s.Timeout. A non-nil error is a failed request, its class
	// given by Classify.
	Do func(ctx context.Context, s *Session) error
}

// Session is the state of one virtual user (closed loop) or one arrival
// (open loop): values carried between steps of a flow.
type Session struct {
	// User is the virtual user's number, from 0; Iteration counts its
	// iterations, from 0.
	User      int
	Iteration int64
	// Vars holds values extracted from earlier responses.
	Vars map[string]string
	// Timeout is how long a request may take.
	Timeout time.Duration
	// Rand is the session's own random source, seeded from load.seed.
	Rand *rand.Rand

	cookies []cookie
	pcg     *rand.PCG // Rand's source, reseeded when a pooled session is reused
	sent    time.Time
	scratch []byte // request rendering, reused
	body    []byte // response body when something is extracted from it
}

type cookie struct{ name, value string }

// MarkSent records that the request goes on the wire now.
func (s *Session) MarkSent() { s.sent = time.Now() }

// Set stores a value for later steps.
func (s *Session) Set(name, value string) {
	if s.Vars == nil {
		s.Vars = make(map[string]string)
	}
	s.Vars[name] = value
}

func (s *Session) setCookie(name, value string) {
	for i := range s.cookies {
		if s.cookies[i].name == name {
			s.cookies[i].value = value
			return
		}
	}
	s.cookies = append(s.cookies, cookie{name, value})
}

// FuncOp is an operation that calls fn with a context bounded by the
// request timeout. fn's errors are classified by Classify, so a gRPC status
// becomes its code's class.
func FuncOp(name string, fn func(ctx context.Context) error) Op {
	return Op{Name: name, Weight: 1, Do: func(ctx context.Context, s *Session) error {
		ctx, cancel := context.WithTimeout(ctx, s.Timeout)
		defer cancel()
		return fn(ctx)
	}}
}

// GRPCOp is a unary call of method ("/pkg.Service/Method" or
// "pkg.Service/Method") on cc, which may be a grpc.ClientConn or any svclab
// transport's client. newReq builds the request for a session (it may read
// s.Vars); newResp returns an empty response message. opts are passed to
// every Invoke.
func GRPCOp(name string, cc grpc.ClientConnInterface, method string, newReq func(s *Session) (any, error), newResp func() any, opts ...grpc.CallOption) Op {
	if !strings.HasPrefix(method, "/") {
		method = "/" + method
	}
	if name == "" {
		name = method[1:]
	}
	return Op{Name: name, Weight: 1, Do: func(ctx context.Context, s *Session) error {
		req, err := newReq(s)
		if err != nil {
			return classed("request", fmt.Errorf("building the request of %s: %w", method, err))
		}
		ctx, cancel := context.WithTimeout(ctx, s.Timeout)
		defer cancel()
		return cc.Invoke(ctx, method, req, newResp(), opts...)
	}}
}

// StatusError is an HTTP answer with an unexpected status code.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return "HTTP status " + strconv.Itoa(e.Code) }

// ClassError gives an error an explicit class.
type ClassError struct {
	Class string
	Err   error
}

func (e *ClassError) Error() string { return e.Class + ": " + e.Err.Error() }
func (e *ClassError) Unwrap() error { return e.Err }

func classed(class string, err error) error { return &ClassError{class, err} }

// Classify names the class of a failed request, as used in errors_by_class
// and the samples' status column: "http_503", "grpc_unavailable",
// "timeout", "connection", or "other". A nil error is "ok".
func Classify(err error) string {
	if err == nil {
		return "ok"
	}
	var ce *ClassError
	if errors.As(err, &ce) {
		return ce.Class
	}
	var se *StatusError
	if errors.As(err, &se) {
		return "http_" + strconv.Itoa(se.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return "timeout"
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK && st.Code() != codes.Unknown {
		switch st.Code() {
		case codes.DeadlineExceeded:
			return "timeout"
		case codes.Canceled:
			return "canceled"
		}
		return "grpc_" + snake(st.Code().String())
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	var oe *net.OpError
	if errors.As(err, &oe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return "connection"
	}
	if _, ok := status.FromError(err); ok {
		return "grpc_unknown"
	}
	return "other"
}

// snake turns "DeadlineExceeded" into "deadline_exceeded".
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
