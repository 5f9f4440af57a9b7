package load

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// NewTarget builds the Target a Config describes: its request or flow,
// sent to cfg.Target over cfg.Protocol. Close it when done.
func NewTarget(cfg Config) (*Target, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Target == "" {
		return nil, errors.New("load.target: no target given")
	}
	steps := []Request{{}}
	switch {
	case cfg.Flow != nil:
		steps = cfg.Flow.Steps
	case cfg.Request != nil:
		steps = []Request{*cfg.Request}
	}
	t := &Target{}
	if cfg.Flow != nil {
		t.Weighted = cfg.Flow.Order == "weighted"
		t.Flow = cfg.Flow.Name
		if t.Flow == "" {
			t.Flow = "flow"
		}
	}
	var err error
	switch cfg.protocol() {
	case "grpc":
		err = grpcTarget(&cfg, t, steps)
	case "h2c":
		err = httpTarget(&cfg, t, steps, true)
	default:
		err = httpTarget(&cfg, t, steps, false)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// tmpl is a string with {{name}} references to session values.
type tmpl struct {
	parts []tpart
	vars  bool
}

type tpart struct {
	lit string
	v   string // variable name when not empty
}

func compileTmpl(s string) tmpl {
	var t tmpl
	at := 0
	for _, m := range varRef.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > at {
			t.parts = append(t.parts, tpart{lit: s[at:m[0]]})
		}
		t.parts = append(t.parts, tpart{v: s[m[2]:m[3]]})
		t.vars = true
		at = m[1]
	}
	if at < len(s) {
		t.parts = append(t.parts, tpart{lit: s[at:]})
	}
	return t
}

func (t tmpl) appendTo(b []byte, s *Session) []byte {
	for _, p := range t.parts {
		switch {
		case p.v == "":
			b = append(b, p.lit...)
		case p.v == "user":
			b = strconv.AppendInt(b, int64(s.User), 10)
		case p.v == "iteration":
			b = strconv.AppendInt(b, s.Iteration, 10)
		default:
			b = append(b, s.Vars[p.v]...)
		}
	}
	return b
}

func (t tmpl) render(s *Session) string { return string(t.appendTo(nil, s)) }

// extractor takes values out of a response into session variables.
type extractor struct {
	vars    []string // variable names, sorted, for a stable order
	src     map[string]string
	json    bool // some rule reads the body as JSON
	headers map[string]string
}

func newExtractor(m map[string]string) *extractor {
	if len(m) == 0 {
		return nil
	}
	e := &extractor{src: m, headers: map[string]string{}}
	for v, src := range m {
		e.vars = append(e.vars, v)
		kind, arg, _ := strings.Cut(src, ":")
		switch kind {
		case "json":
			e.json = true
		case "header":
			e.headers[strings.ToLower(arg)] = v
		}
	}
	sort.Strings(e.vars)
	return e
}

// fromBody applies the json: and cookie: rules.
func (e *extractor) fromBody(s *Session, body []byte) error {
	var doc any
	if e.json {
		if err := json.Unmarshal(body, &doc); err != nil {
			return classed("extract", fmt.Errorf("response is not JSON: %w", err))
		}
	}
	for _, v := range e.vars {
		kind, arg, _ := strings.Cut(e.src[v], ":")
		switch kind {
		case "json":
			val, ok := jsonPath(doc, arg)
			if !ok {
				return classed("extract", fmt.Errorf("response has no JSON field %q for {{%s}}", arg, v))
			}
			s.Set(v, val)
		case "cookie":
			found := false
			for _, c := range s.cookies {
				if c.name == arg {
					s.Set(v, c.value)
					found = true
				}
			}
			if !found {
				return classed("extract", fmt.Errorf("response set no cookie %q for {{%s}}", arg, v))
			}
		case "header":
			if _, ok := s.Vars[v]; !ok {
				return classed("extract", fmt.Errorf("response has no header %q for {{%s}}", arg, v))
			}
		}
	}
	return nil
}

// jsonPath walks "a.b.0.c" through decoded JSON; strings come out bare,
// anything else as JSON.
func jsonPath(doc any, path string) (string, bool) {
	cur := doc
	for _, k := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				return "", false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return "", false
			}
			cur = c[i]
		default:
			return "", false
		}
	}
	if s, ok := cur.(string); ok {
		return s, true
	}
	b, err := json.Marshal(cur)
	return string(b), err == nil
}

// httpReq is one configured HTTP request.
type httpReq struct {
	method  string
	head    bool
	path    tmpl
	body    tmpl
	hdrs    []hdrT
	expect  int
	ex      *extractor
	static  []byte // the whole HTTP/1.1 request, when nothing in it varies
	host    string
	hasBody bool
}

type hdrT struct {
	name string
	val  tmpl
}

func newHTTPReq(cfg *Config, r *Request, host string) *httpReq {
	h := &httpReq{method: r.Method, path: compileTmpl(r.Path), body: compileTmpl(r.Body),
		expect: r.ExpectStatus, ex: newExtractor(r.Extract), host: host}
	if h.method == "" {
		h.method = "GET"
	}
	if r.Path == "" {
		h.path = compileTmpl("/")
	}
	h.head = h.method == "HEAD"
	h.hasBody = r.Body != "" || h.method == "POST" || h.method == "PUT" || h.method == "PATCH"
	names := make([]string, 0, len(r.Headers))
	hasCT := false
	for n := range r.Headers {
		names = append(names, n)
		hasCT = hasCT || strings.EqualFold(n, "content-type")
	}
	sort.Strings(names)
	for _, n := range names {
		h.hdrs = append(h.hdrs, hdrT{n, compileTmpl(r.Headers[n])})
	}
	if !hasCT && r.Body != "" {
		ct := "text/plain"
		if b := strings.TrimSpace(r.Body); strings.HasPrefix(b, "{") || strings.HasPrefix(b, "[") {
			ct = "application/json"
		}
		h.hdrs = append(h.hdrs, hdrT{"Content-Type", compileTmpl(ct)})
	}
	vars := h.path.vars || h.body.vars
	for _, x := range h.hdrs {
		vars = vars || x.val.vars
	}
	if !vars {
		h.static = h.appendH1(nil, &Session{})
	}
	return h
}

// appendH1 renders the request as HTTP/1.1 bytes.
func (h *httpReq) appendH1(b []byte, s *Session) []byte {
	b = append(b, h.method...)
	b = append(b, ' ')
	b = h.path.appendTo(b, s)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, h.host...)
	b = append(b, "\r\nUser-Agent: svclab-load\r\n"...)
	for _, x := range h.hdrs {
		b = append(b, x.name...)
		b = append(b, ": "...)
		b = x.val.appendTo(b, s)
		b = append(b, "\r\n"...)
	}
	if len(s.cookies) > 0 {
		b = append(b, "Cookie: "...)
		for i, c := range s.cookies {
			if i > 0 {
				b = append(b, "; "...)
			}
			b = append(b, c.name...)
			b = append(b, '=')
			b = append(b, c.value...)
		}
		b = append(b, "\r\n"...)
	}
	if h.hasBody {
		// Render the body first to know its length; it goes after the
		// headers, so it is rendered into the tail and moved.
		mark := len(b)
		b = h.body.appendTo(b, s)
		n := len(b) - mark
		body := append([]byte(nil), b[mark:]...)
		b = b[:mark]
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, "\r\n\r\n"...)
		return append(b, body...)
	}
	return append(b, "\r\n"...)
}

func (h *httpReq) check(status int) error {
	if (h.expect != 0 && status != h.expect) || (h.expect == 0 && status >= 400) {
		return &StatusError{Code: status}
	}
	return nil
}

func httpTarget(cfg *Config, t *Target, steps []Request, h2c bool) error {
	u, err := url.Parse(cfg.Target)
	if err != nil {
		return fmt.Errorf("load.target: %w", err)
	}
	base := strings.TrimSuffix(u.Path, "/")
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var h1 *h1Client
	var stdc *stdClient
	if h2c {
		stdc = newStdClient(cfg.Connections, cfg.timeout())
		t.Close = stdc.Close
	} else {
		h1 = newH1Client(addr, cfg.Connections, cfg.timeout())
		t.Close = h1.Close
	}
	for i := range steps {
		st := steps[i]
		st.Path = base + st.Path
		if st.Path == "" {
			st.Path = "/"
		}
		if u.RawQuery != "" && !strings.Contains(st.Path, "?") {
			st.Path += "?" + u.RawQuery
		}
		req := newHTTPReq(cfg, &st, u.Host)
		op := Op{Name: cfg.opName(&steps[i]), Weight: steps[i].Weight}
		if h2c {
			op.Do = stdc.op(req, "http://"+addr)
		} else {
			op.Do = h1Op(h1, req)
		}
		t.Ops = append(t.Ops, op)
	}
	return nil
}

func h1Op(c *h1Client, h *httpReq) func(ctx context.Context, s *Session) error {
	return func(ctx context.Context, s *Session) error {
		req := h.static
		if req == nil || len(s.cookies) > 0 {
			s.scratch = h.appendH1(s.scratch[:0], s)
			req = s.scratch
		}
		h.ex.forget(s)
		cn, err := c.acquire(ctx)
		if err != nil {
			return err
		}
		s.MarkSent()
		reused := cn != nil
		if cn == nil {
			if cn, err = c.dial(ctx); err != nil {
				c.release(nil, false)
				return err
			}
		}
		deadline := s.sent.Add(s.Timeout)
		resp, err := cn.roundTrip(req, h.head, s, h.ex, deadline)
		if err != nil && reused && !resp.got && time.Now().Before(deadline) {
			// The server closed the idle connection (a keep-alive timeout)
			// before our request reached it: retry once on a new one, as
			// net/http does, rather than report an error the service never
			// saw. The wait stays in the service time.
			cn.nc.Close()
			if cn, err = c.dial(ctx); err != nil {
				c.release(nil, false)
				return err
			}
			resp, err = cn.roundTrip(req, h.head, s, h.ex, deadline)
		}
		c.release(cn, err == nil && resp.reuse)
		if err != nil {
			return err
		}
		if err := h.check(resp.status); err != nil {
			return err
		}
		if h.ex != nil {
			return h.ex.fromBody(s, s.body)
		}
		return nil
	}
}

// forget drops the values ex is about to extract, so that a stale value
// never passes for a fresh one.
func (ex *extractor) forget(s *Session) {
	if ex == nil {
		return
	}
	for _, v := range ex.vars {
		delete(s.Vars, v)
	}
}

// sessionHeader keeps cookies (always: a session carries its cookies the
// way a browser does) and the headers ex extracts. The common case, no
// Set-Cookie and nothing to extract, costs one length comparison.
func sessionHeader(s *Session, ex *extractor, name, value []byte) {
	if len(name) == 10 && asciiEqualFold(name, "set-cookie") {
		v := value
		if i := bytes.IndexByte(v, ';'); i >= 0 {
			v = v[:i]
		}
		if k, val, ok := bytes.Cut(v, []byte("=")); ok {
			s.setCookie(string(bytes.TrimSpace(k)), string(bytes.TrimSpace(val)))
		}
	}
	if ex != nil && len(ex.headers) > 0 {
		if v, ok := ex.headers[strings.ToLower(string(name))]; ok {
			s.Set(v, string(value))
		}
	}
}

// stdClient sends h2c requests through net/http, which multiplexes them
// over Connections HTTP/2 connections (one when 0).
type stdClient struct {
	clients []*http.Client
	next    atomic.Uint64
}

func newStdClient(conns int, timeout time.Duration) *stdClient {
	if conns <= 0 {
		conns = 1
	}
	c := &stdClient{}
	for range conns {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr := &http.Transport{Protocols: &p, MaxIdleConnsPerHost: 1, ResponseHeaderTimeout: timeout}
		c.clients = append(c.clients, &http.Client{Transport: tr, Timeout: timeout})
	}
	return c
}

func (c *stdClient) Close() error {
	for _, cl := range c.clients {
		cl.CloseIdleConnections()
	}
	return nil
}

func (c *stdClient) op(h *httpReq, base string) func(ctx context.Context, s *Session) error {
	return func(ctx context.Context, s *Session) error {
		var body io.Reader
		if h.hasBody {
			body = bytes.NewReader(h.body.appendTo(nil, s))
		}
		req, err := http.NewRequestWithContext(ctx, h.method, base+h.path.render(s), body)
		if err != nil {
			return classed("request", err)
		}
		req.Host = h.host
		req.Header.Set("User-Agent", "svclab-load")
		for _, x := range h.hdrs {
			req.Header.Set(x.name, x.val.render(s))
		}
		for _, ck := range s.cookies {
			req.AddCookie(&http.Cookie{Name: ck.name, Value: ck.value})
		}
		cl := c.clients[c.next.Add(1)%uint64(len(c.clients))]
		s.MarkSent()
		resp, err := cl.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		h.ex.forget(s)
		for k, vs := range resp.Header {
			for _, v := range vs {
				sessionHeader(s, h.ex, []byte(k), []byte(v))
			}
		}
		if h.ex != nil && h.ex.json {
			s.body, err = io.ReadAll(resp.Body)
		} else {
			_, err = io.Copy(io.Discard, resp.Body)
		}
		if err != nil {
			return err
		}
		if err := h.check(resp.StatusCode); err != nil {
			return err
		}
		if h.ex != nil {
			return h.ex.fromBody(s, s.body)
		}
		return nil
	}
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

// grpcTarget calls methods by name: request bodies are JSON turned into
// the method's input type found in protoregistry (so the binary must
// link the generated code), or raw proto bytes from body_base64.
func grpcTarget(cfg *Config, t *Target, steps []Request) error {
	addr := cfg.Target
	if u, err := url.Parse(addr); err == nil && u.Scheme != "" && u.Host != "" {
		addr = u.Host
	}
	n := max(cfg.Connections, 1)
	var conns []*grpc.ClientConn
	for range n {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return fmt.Errorf("load.target: gRPC client for %s: %w", addr, err)
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

func grpcNamedOp(name string, cc grpc.ClientConnInterface, st *Request, key string) (Op, error) {
	method := "/" + strings.TrimPrefix(st.Method, "/")
	ex := newExtractor(st.Extract)
	if st.BodyBase64 != "" || st.Body == "" && !knownMethod(method) {
		raw, _ := base64.StdEncoding.DecodeString(st.BodyBase64)
		if ex != nil {
			return Op{}, fmt.Errorf("%s.extract: needs the method's types, and %s is unknown to this binary", key, method)
		}
		op := GRPCOp(name, cc, method, func(*Session) (any, error) { return &rawMsg{b: raw}, nil },
			func() any { return &rawMsg{} }, grpc.ForceCodec(rawCodec{}))
		return op, nil
	}
	in, out, err := methodTypes(method)
	if err != nil {
		return Op{}, fmt.Errorf("%s.method: %w; give the request as body_base64 (serialized proto) instead", key, err)
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
			return Op{}, fmt.Errorf("%s.body: not a %s in JSON: %w", key, in.Descriptor().FullName(), err)
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
