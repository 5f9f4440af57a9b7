package load

import (
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/svclab/svclab/internal/spec"
)

func httpTarget(cfg *Config, t *Target, steps []Request, h2c bool) error {
	network, addr, host := "tcp", "", unixHost
	if path, ok := unixSocket(cfg.Target); ok {
		network, addr = "unix", path
	} else {
		u, err := url.Parse(cfg.Target)
		if err != nil {
			return &spec.KeyError{Key: "load.target", Msg: err.Error()}
		}
		addr, host = u.Host, u.Host
		if u.Port() == "" {
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	var h1 *h1Client
	var h2cc *h2cClient
	if h2c {
		h2cc = newH2CClient(network, addr, cfg.Connections, cfg.timeout())
		t.Close = h2cc.Close
	} else {
		h1 = newH1Client(network, addr, cfg.Connections, cfg.timeout())
		t.Close = h1.Close
	}
	base := "http://" + addr
	if network == "unix" {
		base = "http://" + unixHost
	}
	for i := range steps {
		st := steps[i]
		st.Path = cfg.requestPath(&steps[i])
		req := newHTTPReq(cfg, &st, host)
		op := Op{Name: cfg.opName(&steps[i]), Weight: steps[i].Weight}
		if h2c {
			op.Do = h2cc.op(req, base)
		} else {
			op.Do = h1.op(req)
		}
		t.Ops = append(t.Ops, op)
	}
	return nil
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

// answer takes in an answer with status whose body, when something is
// extracted from it, is in s.body: the status is checked, then the values
// are extracted.
func (h *httpReq) answer(s *Session, status int) error {
	if (h.expect != 0 && status != h.expect) || (h.expect == 0 && status >= 400) {
		return &StatusError{Code: status}
	}
	if h.ex != nil {
		return h.ex.fromBody(s, s.body)
	}
	return nil
}
