package load

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/svclab/svclab/internal/spec"
)

// Config is the [load] table of a spec, and the flags of `svclab load`.
// The zero value of every key means "the default", so that a spec only names
// what it changes; Validate reports bad values by key name.
type Config struct {
	// Mode is "open" (arrivals at a rate, whatever the target does) or
	// "closed" (virtual users that wait for each answer).
	Mode Mode `toml:"mode,omitempty" json:"mode,omitempty"`
	// Target is a URL (http://127.0.0.1:8080), for gRPC host:port, or a
	// unix socket as unix:///path (unix.go).
	// The experiment runner fills it with the deployed entry when empty.
	Target string `toml:"target,omitempty" json:"target,omitempty"`
	// Protocol is "http" (HTTP/1.1 keep-alive), "h2c" (HTTP/2 without TLS)
	// or "grpc". Empty means "http".
	Protocol Protocol `toml:"protocol,omitempty" json:"protocol,omitempty"`
	// TLS makes a gRPC target's connections TLS; nil is plaintext.
	TLS *TLS `toml:"tls,omitempty" json:"tls,omitempty"`
	// Rate is the open-loop arrival rate in requests (or flows) per second.
	Rate float64 `toml:"rate,omitempty" json:"rate,omitempty"`
	// Arrival is "constant" or "poisson".
	Arrival Arrival `toml:"arrival,omitempty" json:"arrival,omitempty"`
	// Duration is the measurement window. With stages and no duration, it is
	// the stages' total.
	Duration Duration `toml:"duration,omitempty" json:"duration,omitempty"`
	// Requests, when > 0, ends the measurement after this many iterations
	// (requests, or flows), even before Duration is over.
	Requests int64 `toml:"requests,omitempty" json:"requests,omitempty"`
	// Warmup runs load before the measurement window and discards it.
	Warmup Duration `toml:"warmup,omitempty" json:"warmup,omitempty"`
	// WarmupRate is the open-loop arrival rate during the warm-up; 0 means
	// the starting level. A JIT compiler warms up by calls, not seconds, so
	// a run measured at a few requests per second needs a faster warm-up.
	WarmupRate float64 `toml:"warmup_rate,omitempty" json:"warmup_rate,omitempty"`
	// WarmupCalls, when > 0, makes the warm-up a closed loop of
	// WarmupUsers users calling back to back until this many iterations
	// completed or Warmup passed, whichever comes first (warmup.go).
	WarmupCalls int64 `toml:"warmup_calls,omitempty" json:"warmup_calls,omitempty"`
	WarmupUsers int   `toml:"warmup_users,omitempty" json:"warmup_users,omitempty"`
	// Users is the number of closed-loop virtual users.
	Users int `toml:"users,omitempty" json:"users,omitempty"`
	// ThinkTime is a fixed pause after each request of a closed-loop user.
	ThinkTime Duration `toml:"think_time,omitempty" json:"think_time,omitempty"`
	// ThinkMin and ThinkMax draw the pause uniformly instead.
	ThinkMin Duration `toml:"think_min,omitempty" json:"think_min,omitempty"`
	ThinkMax Duration `toml:"think_max,omitempty" json:"think_max,omitempty"`
	// SpawnRate limits how many users start per second; 0 starts them at once.
	SpawnRate float64 `toml:"spawn_rate,omitempty" json:"spawn_rate,omitempty"`
	// Connections is the number of connections shared by all requests.
	// 0 means one per concurrent request: per user in a closed loop.
	Connections int `toml:"connections,omitempty" json:"connections,omitempty"`
	// MaxInflight caps open-loop concurrency; arrivals beyond it are counted
	// as dropped. 0 means DefaultMaxInflight.
	MaxInflight int `toml:"max_inflight,omitempty" json:"max_inflight,omitempty"`
	// Timeout bounds each request. 0 means DefaultTimeout.
	Timeout Duration `toml:"timeout,omitempty" json:"timeout,omitempty"`
	// RawSamples streams every request to samples.parquet.
	RawSamples bool `toml:"raw_samples,omitempty" json:"raw_samples,omitempty"`
	// Seed makes Poisson arrivals, think times and weighted picks repeatable.
	// 0 picks one from the clock.
	Seed int64 `toml:"seed,omitempty" json:"seed,omitempty"`
	// Stages change the rate (open) or the user count (closed) over time.
	Stages []Stage `toml:"stages,omitempty" json:"stages,omitempty"`
	// Request is the one request sent when there is no flow.
	Request *Request `toml:"request,omitempty" json:"request,omitempty"`
	// Flow is a sequence or weighted set of requests run per iteration.
	Flow *Flow `toml:"flow,omitempty" json:"flow,omitempty"`
	// Thresholds are pass/fail criteria checked after the run.
	Thresholds *Thresholds `toml:"thresholds,omitempty" json:"thresholds,omitempty"`
	// Generators splits the load over this many generator processes
	// (shard.go); nil means one. A pointer, so that a written 0 is an
	// error rather than the default.
	Generators *int `toml:"generators,omitempty" json:"generators,omitempty"`
}

// Stage is one step of a load profile.
type Stage struct {
	// Type is "ramp" (change linearly from the previous level to this one
	// over Duration) or "step" (jump to this level and hold it).
	Type     string   `toml:"type" json:"type"`
	Duration Duration `toml:"duration" json:"duration"`
	// Rate is the open-loop level reached, Users the closed-loop one.
	Rate  float64 `toml:"rate,omitempty" json:"rate,omitempty"`
	Users int     `toml:"users,omitempty" json:"users,omitempty"`
}

// Request is one HTTP request or gRPC unary call: the single [load.request]
// or one step of a flow.
type Request struct {
	// Name is the operation name in the results. Empty means "METHOD path"
	// for HTTP and the method name for gRPC.
	Name string `toml:"name,omitempty" json:"name,omitempty"`
	// Method is the HTTP method (default GET), or for gRPC the full method
	// name "package.Service/Method".
	Method string `toml:"method,omitempty" json:"method,omitempty"`
	// Path is the HTTP path and query, appended to the target URL.
	Path string `toml:"path,omitempty" json:"path,omitempty"`
	// Body is the HTTP body, or for gRPC the request message in JSON.
	// Path, Body and header values may use {{name}} for a value extracted by
	// an earlier step, {{user}} and {{iteration}}.
	Body string `toml:"body,omitempty" json:"body,omitempty"`
	// BodyBase64 is a gRPC request message as serialized proto bytes, for
	// methods whose types this binary does not know.
	BodyBase64 string            `toml:"body_base64,omitempty" json:"body_base64,omitempty"`
	Headers    map[string]string `toml:"headers,omitempty" json:"headers,omitempty"`
	// ExpectStatus is the HTTP status that counts as success; 0 accepts
	// any status below 400.
	ExpectStatus int `toml:"expect_status,omitempty" json:"expect_status,omitempty"`
	// Extract stores values of the response in per-user variables:
	// name = "json:a.b.0.c", "header:X-Id" or "cookie:session".
	Extract map[string]string `toml:"extract,omitempty" json:"extract,omitempty"`
	// Weight is the relative frequency of this step in a weighted flow.
	Weight float64 `toml:"weight,omitempty" json:"weight,omitempty"`
}

// Flow is what one user iteration does.
type Flow struct {
	// Name is the flow's operation name; empty means "flow".
	Name string `toml:"name,omitempty" json:"name,omitempty"`
	// Order is "sequence" (every step in order) or "weighted" (one step
	// per iteration, picked by weight).
	Order Order     `toml:"order,omitempty" json:"order,omitempty"`
	Steps []Request `toml:"steps" json:"steps"`
}

// Defaults of keys left empty.
const (
	DefaultMaxInflight = 4096
	DefaultTimeout     = 10 * time.Second
	DefaultDuration    = 10 * time.Second
)

// Limits of one generator. Values beyond them are refused, with the limit
// stated, rather than run badly; docs/LOAD.md ("Limits and errors") says
// where each comes from.
const (
	// MaxRate is the highest open-loop rate (arrivals per second) one
	// generator paces: its dispatch loop, one goroutine per arrival,
	// reaches about 250,000 arrivals a second on one core of a 2-core
	// virtual machine against a target that answers at once
	// (BenchmarkPacerCeiling), and falls behind the schedule beyond.
	// The limit leaves room for the requests themselves.
	MaxRate = 100_000
	// MaxUsers bounds closed-loop users: each is a goroutine holding its
	// own connection unless load.connections is set, and loopback has
	// about 28,000 ephemeral ports per target.
	MaxUsers = 10_000
	// MaxConnections bounds load.connections, for the same reason.
	MaxConnections = 10_000
	// MaxInflightLimit bounds load.max_inflight: each outstanding arrival
	// is a goroutine with its buffers, some kilobytes.
	MaxInflightLimit = 1_000_000
	// maxDuration is the longest time.Duration, about 292 years; the
	// warm-up and the measurement together must fit in it.
	maxDuration = time.Duration(math.MaxInt64)
)

// Duration is a time.Duration written as a string such as "30s" or
// "250ms"; it is the spec's own duration type.
type Duration = spec.Duration

// Mode is load.mode: "open" (the default) or "closed".
type Mode string

// Protocol is load.protocol: "http" (the default), "h2c" or "grpc".
type Protocol string

// Arrival is load.arrival: "constant" (the default) or "poisson".
type Arrival string

// Order is load.flow.order: "sequence" (the default) or "weighted".
type Order string

// The values of the keys above.
const (
	Open     Mode     = "open"
	Closed   Mode     = "closed"
	HTTP     Protocol = "http"
	H2C      Protocol = "h2c"
	GRPC     Protocol = "grpc"
	Constant Arrival  = "constant"
	Poisson  Arrival  = "poisson"
	Sequence Order    = "sequence"
	Weighted Order    = "weighted"
)

var (
	modes     = []string{string(Open), string(Closed)}
	protocols = []string{string(HTTP), string(H2C), string(GRPC)}
	arrivals  = []string{string(Constant), string(Poisson)}
	orders    = []string{string(Sequence), string(Weighted)}
)

// UnmarshalText refuses a value outside the set, "" included: a key left
// out takes its default, but one written empty is a mistake.
func (m *Mode) UnmarshalText(b []byte) error     { return oneOf((*string)(m), b, modes) }
func (p *Protocol) UnmarshalText(b []byte) error { return oneOf((*string)(p), b, protocols) }
func (a *Arrival) UnmarshalText(b []byte) error  { return oneOf((*string)(a), b, arrivals) }
func (o *Order) UnmarshalText(b []byte) error    { return oneOf((*string)(o), b, orders) }

func oneOf(dst *string, b []byte, valid []string) error {
	if err := checkOneOf(string(b), valid); err != nil {
		return err
	}
	*dst = string(b)
	return nil
}

// checkOneOf reports v unless it is one of valid.
func checkOneOf(v string, valid []string) error {
	if slices.Contains(valid, v) {
		return nil
	}
	return fmt.Errorf("must be %s, got %s", alternatives(valid), spec.Echo(v))
}

// alternatives writes `"a", "b" or "c"`.
func alternatives(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// Decode decodes s's [load] table into c, as Spec.Decode does, and refuses
// a zero written for a key whose zero value stands for its default: a
// value means what it says, so "0s" for load.duration must not measure
// for 10 s. (Keys whose zero the docs give a meaning, such as requests =
// 0 for no limit, take it.)
func Decode(s *spec.Spec, c *Config) error {
	if err := s.Decode("load", c); err != nil {
		return err
	}
	var errs []error
	for _, z := range []struct {
		key  string
		zero bool
		def  string
	}{
		{"duration", c.Duration == 0, fmt.Sprintf("%s, or the stages' total", DefaultDuration)},
		{"timeout", c.Timeout == 0, DefaultTimeout.String()},
		{"max_inflight", c.MaxInflight == 0, strconv.Itoa(DefaultMaxInflight)},
		{"warmup_rate", c.WarmupRate == 0, "the starting level"},
		{"warmup_users", c.WarmupUsers == 0, strconv.Itoa(DefaultWarmupUsers)},
	} {
		if v, written := s.Lookup("load." + z.key); written && z.zero {
			errs = append(errs, s.Errorf("load."+z.key, "must be > 0, got %s (leave the key out for the default, %s)", spec.Echo(v), z.def))
		}
	}
	return errors.Join(errs...)
}

// Validate checks every key and returns one error per bad key, each naming
// the key as it is written in a spec ("load.rate: must be > 0, got -5").
// An empty target is valid, as the runner may fill it in later.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &spec.KeyError{Key: "load." + key, Msg: fmt.Sprintf(format, args...)})
	}
	// A key given in Go as "" takes its default; a spec cannot give one
	// (the types' UnmarshalText refuse it).
	for _, e := range []struct {
		key, v string
		valid  []string
	}{{"mode", string(c.mode()), modes}, {"protocol", string(c.protocol()), protocols},
		{"arrival", string(cmp.Or(c.Arrival, Constant)), arrivals}} {
		if err := checkOneOf(e.v, e.valid); err != nil {
			bad(e.key, "%v", err)
		}
	}
	mode := c.mode()
	if c.Target != "" {
		if err := c.checkTarget(); err != nil {
			bad("target", "%v", err)
		}
	}
	if c.TLS != nil {
		if key, err := c.TLS.check(c.protocol()); err != nil {
			bad("tls."+key, "%v", err)
		}
	}
	// number checks a float key: finite, and within [lo, hi] (above lo
	// when positive).
	number := func(key string, v, lo, hi float64, positive bool) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			bad(key, "must be a finite number, got %s", spec.Echo(v))
		case positive && v <= lo:
			bad(key, "must be > %v, got %v", lo, v)
		case v < lo:
			bad(key, "must be >= %v, got %v", lo, v)
		case v > hi && hi == MaxRate:
			bad(key, "must be at most %d arrivals per second, what one generator can pace (see \"Limits and errors\" in docs/LOAD.md), got %v", MaxRate, v)
		case v > hi:
			bad(key, "must be at most %v, got %v", hi, v)
		}
	}
	switch {
	case mode == Closed && c.Rate != 0:
		bad("rate", "applies to mode \"open\" only, got %s with mode \"closed\"", spec.Echo(c.Rate))
	case mode == Open:
		number("rate", c.Rate, 0, MaxRate, len(c.Stages) == 0)
	}
	switch {
	case mode == Closed && c.WarmupRate != 0:
		bad("warmup_rate", "applies to mode \"open\" only, got %s with mode \"closed\"", spec.Echo(c.WarmupRate))
	case c.WarmupRate != 0 && c.Warmup == 0:
		bad("warmup_rate", "needs a warmup duration to apply to, got %s with no warmup", spec.Echo(c.WarmupRate))
	case mode == Open:
		number("warmup_rate", c.WarmupRate, 0, MaxRate, false)
	}
	switch {
	case c.Users < 0 || (mode == Closed && c.Users == 0 && len(c.Stages) == 0):
		bad("users", "must be > 0, got %d", c.Users)
	case mode == Open && c.Users != 0:
		bad("users", "applies to mode \"closed\" only, got %d with mode \"open\"", c.Users)
	case c.Users > MaxUsers:
		bad("users", "must be at most %d, got %d", MaxUsers, c.Users)
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"duration", c.Duration}, {"warmup", c.Warmup}, {"think_time", c.ThinkTime},
		{"think_min", c.ThinkMin}, {"think_max", c.ThinkMax}, {"timeout", c.Timeout}} {
		if d.v < 0 {
			bad(d.key, "must be >= 0, got %s", d.v)
		}
	}
	if c.ThinkTime != 0 && (c.ThinkMin != 0 || c.ThinkMax != 0) {
		bad("think_time", "set either think_time or think_min/think_max, not both")
	}
	if c.ThinkMax < c.ThinkMin {
		bad("think_max", "must be >= think_min (%s), got %s", c.ThinkMin, c.ThinkMax)
	}
	if c.Requests < 0 {
		bad("requests", "must be >= 0, got %d", c.Requests)
	}
	number("spawn_rate", c.SpawnRate, 0, math.MaxFloat64, false)
	whole := func(key string, v, hi int) {
		switch {
		case v < 0:
			bad(key, "must be >= 0, got %d", v)
		case v > hi:
			bad(key, "must be at most %d, got %d", hi, v)
		}
	}
	whole("connections", c.Connections, MaxConnections)
	whole("max_inflight", c.MaxInflight, MaxInflightLimit)
	var total time.Duration
	for i, s := range c.Stages {
		key := fmt.Sprintf("stages[%d]", i)
		switch s.Type {
		case "ramp", "step":
		default:
			bad(key+".type", "must be \"ramp\" or \"step\", got %s", spec.Echo(s.Type))
		}
		if s.Duration <= 0 {
			bad(key+".duration", "must be > 0, got %s", s.Duration)
		}
		total = addSat(total, max(s.Duration.D(), 0))
		if mode == Open {
			number(key+".rate", s.Rate, 0, MaxRate, false)
			if s.Users != 0 {
				bad(key+".users", "applies to mode \"closed\" only")
			}
		} else {
			whole(key+".users", s.Users, MaxUsers)
			if s.Rate != 0 {
				bad(key+".rate", "applies to mode \"open\" only")
			}
		}
	}
	if c.Duration <= 0 && total == maxDuration {
		bad("stages", "take more than %s together, longer than svclab can count", maxDuration)
	} else if addSat(max(c.Warmup.D(), 0), c.MeasureDuration()) == maxDuration {
		bad("warmup", "%s of warm-up and %s of measurement take more than %s together, longer than svclab can count", c.Warmup, c.MeasureDuration(), maxDuration)
	}
	if c.Request != nil && c.Flow != nil {
		bad("flow", "set either [load.request] or [load.flow], not both")
	}
	if c.Request != nil {
		errs = append(errs, c.checkRequest("request", c.Request, nil)...)
	} else if c.Flow == nil && c.Target != "" && c.protocol() == GRPC {
		// A URL's default request is GET /; a gRPC target has none.
		bad("request.method", "a gRPC target needs a method, such as \"svclab.echo.Echo/Echo\"")
	}
	if c.Flow != nil {
		order := cmp.Or(c.Flow.Order, Sequence)
		if err := checkOneOf(string(order), orders); err != nil {
			bad("flow.order", "%v", err)
		}
		if len(c.Flow.Steps) == 0 {
			bad("flow.steps", "must have at least one step")
		}
		known := map[string]bool{}
		names := map[string]int{}
		for i := range c.Flow.Steps {
			st := &c.Flow.Steps[i]
			key := fmt.Sprintf("flow.steps[%d]", i)
			var vars map[string]bool
			if order != Weighted {
				vars = known
			}
			errs = append(errs, c.checkRequest(key, st, vars)...)
			if math.IsNaN(st.Weight) || math.IsInf(st.Weight, 0) {
				bad(key+".weight", "must be a finite number, got %s", spec.Echo(st.Weight))
			} else if st.Weight < 0 || (order == Weighted && st.Weight == 0) {
				bad(key+".weight", "must be > 0, got %v", st.Weight)
			}
			n := c.opName(st)
			if j, dup := names[n]; dup {
				bad(key+".name", "%q is also the name of flow.steps[%d]; give one a name", n, j)
			}
			names[n] = i
			for v := range st.Extract {
				known[v] = true
			}
		}
		if fn := c.Flow.Name; fn != "" {
			if _, dup := names[fn]; dup || fn == "total" {
				bad("flow.name", "%q is taken by a step or by \"total\"", fn)
			}
		}
	}
	errs = append(errs, c.Thresholds.validate(c.opNames())...)
	errs = append(errs, c.checkGenerators()...)
	errs = append(errs, c.checkWarmupCalls()...)
	return errors.Join(errs...)
}

// checkTarget checks the target as its protocol reads it: an http:// URL
// for http and h2c, host:port or grpc://host:port (or grpc+tcp://) for
// gRPC, or unix:///path for any (unix.go). A target that does not fit
// would only fail request by request, after the run.
func (c *Config) checkTarget() error {
	t := c.Target
	if i := strings.IndexFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return fmt.Errorf("%s has a space or control character at position %d", spec.Echo(t), i+1)
	}
	if path, ok := unixSocket(t); ok {
		if !filepath.IsAbs(path) {
			return fmt.Errorf("a unix socket's target is unix:// and the socket's absolute path, e.g. unix:///run/app.sock, got %s", spec.Echo(t))
		}
		return nil
	}
	if path, ok := strings.CutPrefix(t, "unix:"); ok {
		// nginx's listen and grpc-go write unix:/path; svclab's
		// targets are URLs, with unix:// before the path.
		hint := ""
		if filepath.IsAbs(path) {
			hint = " (write " + UnixTarget(path) + ")"
		}
		return fmt.Errorf("a unix socket's target is unix:// and the socket's absolute path, e.g. unix:///run/app.sock, got %s%s", spec.Echo(t), hint)
	}
	scheme, _, hasScheme := strings.Cut(t, "://")
	scheme = strings.ToLower(scheme)
	if c.protocol() == GRPC {
		hostport := t
		if hasScheme {
			// grpc+tcp:// is how svclab up prints an entry.
			if scheme != "grpc" && scheme != "grpc+tcp" {
				return fmt.Errorf("protocol \"grpc\" wants host:port or grpc://host:port, got a %s:// URL, %s (for an HTTP server, use protocol \"http\" or \"h2c\")", scheme, spec.Echo(t))
			}
			u, err := url.Parse(t)
			if err != nil {
				return fmt.Errorf("%s is not a URL: %w", spec.Echo(t), unwrapURL(err))
			}
			if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
				return fmt.Errorf("a gRPC target is host:port only, got %s (the method is load.request.method)", spec.Echo(t))
			}
			hostport = u.Host
		}
		return checkHostPort(t, hostport, true)
	}
	if !hasScheme {
		hint := ""
		if _, _, err := net.SplitHostPort(t); err == nil {
			hint = " (for a gRPC server, use protocol \"grpc\")"
		}
		return fmt.Errorf("want an http:// URL such as http://127.0.0.1:8080, got %s%s", spec.Echo(t), hint)
	}
	switch scheme {
	case "http":
	case "https":
		return fmt.Errorf("https is not supported (svclab load speaks plain HTTP/1.1, h2c and gRPC), got %s", spec.Echo(t))
	case "grpc":
		return fmt.Errorf("a grpc:// target needs protocol \"grpc\", got protocol %q", c.protocol())
	default:
		return fmt.Errorf("want an http:// URL such as http://127.0.0.1:8080, got %s", spec.Echo(t))
	}
	u, err := url.Parse(t)
	if err != nil {
		return fmt.Errorf("%s is not a URL: %w", spec.Echo(t), unwrapURL(err))
	}
	if u.User != nil {
		return fmt.Errorf("%s has user info, which is never sent; give an Authorization header instead", spec.Echo(t))
	}
	if u.Fragment != "" || strings.HasSuffix(t, "#") {
		return fmt.Errorf("%s has a #fragment, which is never sent", spec.Echo(t))
	}
	return checkHostPort(t, u.Host, false)
}

// unwrapURL drops url.Error's repetition of the URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// checkHostPort checks the host and port of target.
func checkHostPort(target, hostport string, needPort bool) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		if needPort {
			return fmt.Errorf("want host:port, e.g. 127.0.0.1:9000, got %s", spec.Echo(target))
		}
		host = strings.Trim(hostport, "[]")
	}
	if host == "" {
		return fmt.Errorf("%s has no host", spec.Echo(target))
	}
	if port == "" {
		if needPort {
			return fmt.Errorf("%s has no port", spec.Echo(target))
		}
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %s is out of range 1-65535 in %s", spec.Echo(port), spec.Echo(target))
	}
	return nil
}

var (
	httpMethod = regexp.MustCompile(`^[A-Z]+$`)
	// notHeaderName finds what would break a request's framing in a
	// header name: RFC 9110 allows a token only, but a server is the judge
	// of the rest.
	notHeaderName = regexp.MustCompile(`[\s:\x00-\x1f\x7f]`)
)

// checkRequest validates r; vars, when not nil, holds the variables earlier
// steps extract, so a reference to any other is an error.
func (c *Config) checkRequest(key string, r *Request, vars map[string]bool) []error {
	var errs []error
	bad := func(k, format string, args ...any) {
		errs = append(errs, &spec.KeyError{Key: "load." + key + "." + k, Msg: fmt.Sprintf(format, args...)})
	}
	if c.protocol() == GRPC {
		if !strings.Contains(strings.TrimPrefix(r.Method, "/"), "/") {
			bad("method", "want a gRPC method such as \"svclab.echo.Echo/Echo\", got %s", spec.Echo(r.Method))
		}
		if r.Body != "" && r.BodyBase64 != "" {
			bad("body_base64", "set either body (JSON) or body_base64 (proto bytes), not both")
		}
		if r.BodyBase64 != "" {
			if _, err := base64.StdEncoding.DecodeString(r.BodyBase64); err != nil {
				bad("body_base64", "not base64: %v", err)
			}
		}
		if r.ExpectStatus != 0 {
			bad("expect_status", "applies to HTTP only")
		}
		if r.Path != "" {
			bad("path", "applies to HTTP only; a gRPC call is named by method")
		}
	} else {
		if r.Method != "" && !httpMethod.MatchString(r.Method) {
			bad("method", "want an HTTP method such as GET or POST, got %s", spec.Echo(r.Method))
		}
		if r.Path != "" && !strings.HasPrefix(r.Path, "/") {
			bad("path", "must start with /, got %s", spec.Echo(r.Path))
		} else if i := strings.IndexFunc(r.Path, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }); i >= 0 {
			bad("path", "has a space or control character at position %d (write it as %%20 or the like): %s", i+1, spec.Echo(r.Path))
		}
		if r.ExpectStatus != 0 && (r.ExpectStatus < 100 || r.ExpectStatus > 599) {
			bad("expect_status", "must be an HTTP status 100-599, got %d", r.ExpectStatus)
		}
		if r.BodyBase64 != "" {
			bad("body_base64", "applies to gRPC only")
		}
	}
	for _, h := range slices.Sorted(maps.Keys(r.Headers)) {
		if h == "" || notHeaderName.MatchString(h) {
			bad("headers", "%s is not a header name", spec.Echo(h))
		}
		if strings.ContainsAny(r.Headers[h], "\r\n\x00") {
			bad("headers."+h, "must not contain a line break or NUL")
		}
	}
	if r.Name == "total" {
		bad("name", "\"total\" is reserved for all requests together")
	}
	for _, name := range slices.Sorted(maps.Keys(r.Extract)) {
		src := r.Extract[name]
		kind, arg, ok := strings.Cut(src, ":")
		if !ok || arg == "" || (kind != "json" && kind != "header" && kind != "cookie") {
			bad("extract."+name, "want \"json:path\", \"header:Name\" or \"cookie:Name\", got %s", spec.Echo(src))
		}
		if c.protocol() == GRPC && kind != "json" {
			bad("extract."+name, "gRPC responses have json: fields only, got %s", spec.Echo(src))
		}
	}
	if vars != nil {
		texts := []struct{ k, v string }{{"path", r.Path}, {"body", r.Body}}
		for _, h := range slices.Sorted(maps.Keys(r.Headers)) {
			texts = append(texts, struct{ k, v string }{"headers." + h, r.Headers[h]})
		}
		for _, t := range texts {
			for _, m := range varRef.FindAllStringSubmatch(t.v, -1) {
				if n := m[1]; n != "user" && n != "iteration" && !vars[n] {
					bad(t.k, "uses {{%s}}, which no earlier step extracts", n)
				}
			}
		}
	}
	for _, t := range []struct{ k, v string }{{"path", r.Path}, {"body", r.Body}} {
		for _, m := range pickRef.FindAllStringSubmatch(t.v, -1) {
			if slices.Contains(strings.Split(m[1], "|"), "") {
				bad(t.k, "%s has an empty choice: write {{pick:a|b|c}}", spec.Echo(m[0]))
			}
		}
	}
	return errs
}

func (c *Config) mode() Mode { return cmp.Or(c.Mode, Open) }

func (c *Config) protocol() Protocol { return cmp.Or(c.Protocol, HTTP) }

// steps are the requests of one iteration: the flow's steps, the one
// request, or the default request (GET of the target URL).
func (c *Config) steps() []Request {
	switch {
	case c.Flow != nil:
		return c.Flow.Steps
	case c.Request != nil:
		return []Request{*c.Request}
	}
	return []Request{{}}
}

// opNames are the names of the operations a run of c reports, or nil when
// they are not known before the target is built (the runner's own
// requests, with no target, request or flow in the table).
func (c *Config) opNames() []string {
	if c.Target == "" && c.Request == nil && c.Flow == nil {
		return nil
	}
	names := []string{"total"}
	for i := range c.steps() {
		names = append(names, c.opName(&c.steps()[i]))
	}
	if c.Flow != nil {
		names = append(names, cmp.Or(c.Flow.Name, "flow"))
	}
	return names
}

// opName is the operation name a request is reported under: its name, or
// for HTTP its method and the path actually requested (the target URL's
// path and query joined with the request's), for gRPC its method.
func (c *Config) opName(r *Request) string {
	if r.Name != "" {
		return r.Name
	}
	if c.protocol() == GRPC {
		return strings.TrimPrefix(r.Method, "/")
	}
	return cmp.Or(r.Method, "GET") + " " + c.requestPath(r)
}

// requestPath is the path and query r requests: the target URL's path
// with r's appended, and the URL's query when r has none.
func (c *Config) requestPath(r *Request) string {
	var base, query string
	_, unix := unixSocket(c.Target) // a socket's path is no part of the request's
	if u, err := url.Parse(c.Target); err == nil && c.Target != "" && !unix {
		base, query = strings.TrimSuffix(u.EscapedPath(), "/"), u.RawQuery
	}
	p := base + r.Path
	if p == "" {
		p = "/"
	}
	if query != "" && !strings.Contains(p, "?") {
		p += "?" + query
	}
	return p
}

// MeasureDuration is the length of the measurement window: duration, or
// the stages' total, or DefaultDuration. A total past what a
// time.Duration holds is that maximum (Validate refuses it).
func (c *Config) MeasureDuration() time.Duration {
	if c.Duration > 0 {
		return c.Duration.D()
	}
	if len(c.Stages) > 0 {
		var d time.Duration
		for _, s := range c.Stages {
			d = addSat(d, max(s.Duration.D(), 0))
		}
		return d
	}
	return DefaultDuration
}

// addSat adds two non-negative durations, saturating at maxDuration
// rather than wrapping negative.
func addSat(a, b time.Duration) time.Duration {
	if a > maxDuration-b {
		return maxDuration
	}
	return a + b
}

func (c *Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout.D()
	}
	return DefaultTimeout
}

func (c *Config) maxInflight() int {
	if c.MaxInflight > 0 {
		return c.MaxInflight
	}
	return DefaultMaxInflight
}
