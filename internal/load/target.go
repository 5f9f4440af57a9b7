package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/svclab/svclab/internal/spec"
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

// NewTarget builds the Target a Config describes: its request or flow,
// sent to cfg.Target over cfg.Protocol. Close it when done.
func NewTarget(cfg Config) (*Target, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Target == "" {
		return nil, &spec.KeyError{Key: "load.target", Msg: "no target given"}
	}
	steps := cfg.steps()
	t := &Target{}
	if cfg.Flow != nil {
		t.Weighted = cfg.Flow.Order == Weighted
		t.Flow = cfg.Flow.Name
		if t.Flow == "" {
			t.Flow = "flow"
		}
	}
	var err error
	switch cfg.protocol() {
	case GRPC:
		err = grpcTarget(&cfg, t, steps)
	case H2C:
		err = httpTarget(&cfg, t, steps, true)
	default:
		err = httpTarget(&cfg, t, steps, false)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
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
