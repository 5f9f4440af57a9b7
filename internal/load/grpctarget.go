package load

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/svclab/svclab/internal/spec"
)

// grpcTarget calls methods by name: request bodies are JSON turned into
// the method's input type found in protoregistry (so the binary must
// link the generated code), or raw proto bytes from body_base64.
func grpcTarget(cfg *Config, t *Target, steps []Request) error {
	addr := cfg.Target
	if u, err := url.Parse(addr); err == nil && u.Scheme != "" && u.Host != "" {
		addr = u.Host
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		tc, key, err := cfg.TLS.config()
		if err != nil {
			return &spec.KeyError{Key: "load.tls." + key, Msg: err.Error()}
		}
		creds = credentials.NewTLS(tc)
	}
	n := max(cfg.Connections, 1)
	var conns []*grpc.ClientConn
	for range n {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return &spec.KeyError{Key: "load.target", Msg: fmt.Sprintf("gRPC client for %s: %v", addr, err)}
		}
		conns = append(conns, cc)
	}
	var next atomic.Uint64
	pick := &roundRobin{conns: conns, next: &next}
	t.Close = func() error {
		var errs []error
		for _, c := range conns {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	for i := range steps {
		st := &steps[i]
		key := "load.request"
		if cfg.Flow != nil {
			key = fmt.Sprintf("load.flow.steps[%d]", i)
		}
		op, err := grpcNamedOp(cfg.opName(st), pick, st, key)
		if err != nil {
			t.Close()
			return err
		}
		op.Weight = st.Weight
		t.Ops = append(t.Ops, op)
	}
	return nil
}

// roundRobin spreads calls over several connections, as one
// grpc.ClientConnInterface.
type roundRobin struct {
	conns []*grpc.ClientConn
	next  *atomic.Uint64
}

func (r *roundRobin) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return r.conns[r.next.Add(1)%uint64(len(r.conns))].Invoke(ctx, method, args, reply, opts...)
}

func (r *roundRobin) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return r.conns[r.next.Add(1)%uint64(len(r.conns))].NewStream(ctx, desc, method, opts...)
}

// grpcNamedOp builds the op calling st.Method by name; key is where st is
// written, for errors.
func grpcNamedOp(name string, cc grpc.ClientConnInterface, st *Request, key string) (Op, error) {
	method := "/" + strings.TrimPrefix(st.Method, "/")
	ex := newExtractor(st.Extract)
	if st.BodyBase64 != "" || st.Body == "" && !knownMethod(method) {
		raw, _ := base64.StdEncoding.DecodeString(st.BodyBase64)
		if ex != nil {
			return Op{}, &spec.KeyError{Key: key + ".extract", Msg: fmt.Sprintf("needs the method's types, and %s is unknown to this binary", method)}
		}
		op := GRPCOp(name, cc, method, func(*Session) (any, error) { return &rawMsg{b: raw}, nil },
			func() any { return &rawMsg{} }, grpc.ForceCodec(rawCodec{}))
		return op, nil
	}
	in, out, err := methodTypes(method)
	if err != nil {
		return Op{}, &spec.KeyError{Key: key + ".method", Msg: fmt.Sprintf("%v; give the request as body_base64 (serialized proto) instead", err)}
	}
	body := st.Body
	if body == "" {
		body = "{}"
	}
	tb := compileTmpl(body)
	var fixed proto.Message
	if !tb.vars {
		fixed = in.New().Interface()
		if err := protojson.Unmarshal([]byte(body), fixed); err != nil {
			return Op{}, &spec.KeyError{Key: key + ".body", Msg: fmt.Sprintf("not a %s in JSON: %v", in.Descriptor().FullName(), err)}
		}
	}
	newReq := func(s *Session) (any, error) {
		if fixed != nil {
			return fixed, nil
		}
		m := in.New().Interface()
		if err := protojson.Unmarshal(tb.appendTo(nil, s), m); err != nil {
			return nil, err
		}
		return m, nil
	}
	op := GRPCOp(name, cc, method, newReq, func() any { return out.New().Interface() })
	if ex != nil {
		// GRPCOp drops the reply; extraction needs it.
		op.Do = func(ctx context.Context, s *Session) error {
			req, err := newReq(s)
			if err != nil {
				return classed("request", err)
			}
			reply := out.New().Interface()
			cctx, cancel := context.WithTimeout(ctx, s.Timeout)
			defer cancel()
			if err := cc.Invoke(cctx, method, req, reply); err != nil {
				return err
			}
			b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(reply)
			if err != nil {
				return classed("extract", err)
			}
			return ex.fromBody(s, b)
		}
	}
	return op, nil
}

func knownMethod(method string) bool {
	_, _, err := methodTypes(method)
	return err == nil
}

// methodTypes finds a method's input and output message types.
func methodTypes(method string) (protoreflect.MessageType, protoreflect.MessageType, error) {
	svc, m, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !ok {
		return nil, nil, fmt.Errorf("%q is not service/method", method)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, nil, fmt.Errorf("service %s is unknown to this binary: %w", svc, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, nil, fmt.Errorf("%s is not a service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(m))
	if md == nil {
		return nil, nil, fmt.Errorf("service %s has no method %s", svc, m)
	}
	in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return nil, nil, fmt.Errorf("input type of %s: %w", method, err)
	}
	out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil, nil, fmt.Errorf("output type of %s: %w", method, err)
	}
	return in, out, nil
}

// rawCodec sends and receives serialized proto bytes as they are, for
// methods whose message types this binary does not know.
type rawCodec struct{}

type rawMsg struct{ b []byte }

func (rawCodec) Name() string { return "proto" }
func (rawCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(*rawMsg)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return m.b, nil
}
func (rawCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*rawMsg)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	m.b = append(m.b[:0], data...)
	return nil
}
