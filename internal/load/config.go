package load

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/spec"
)

// Config is the [load] table of a spec, and the flags of `svclab load`.
// The zero value of every key means "the default", so that a spec only names
// what it changes; Validate reports bad values by key name.
type Config struct {
	// Mode is "open" (arrivals at a rate, whatever the target does) or
	// "closed" (virtual users that wait for each answer).
	Mode string `toml:"mode,omitempty" json:"mode,omitempty"`
	// Target is a URL (http://127.0.0.1:8080) or, for gRPC, host:port.
	// The experiment runner fills it with the deployed entry when empty.
	Target string `toml:"target,omitempty" json:"target,omitempty"`
	// Protocol is "http" (HTTP/1.1 keep-alive), "h2c" (HTTP/2 without TLS)
	// or "grpc". Empty means "http".
	Protocol string `toml:"protocol,omitempty" json:"protocol,omitempty"`
	// Rate is the open-loop arrival rate in requests (or flows) per second.
	Rate float64 `toml:"rate,omitempty" json:"rate,omitempty"`
	// Arrival is "constant" or "poisson".
	Arrival string `toml:"arrival,omitempty" json:"arrival,omitempty"`
	// Duration is the measurement window. With stages and no duration, it is
	// the stages' total.
	Duration Duration `toml:"duration,omitempty" json:"duration,omitempty"`
	// Requests, when > 0, ends the measurement after this many iterations
	// (requests, or flows), even before Duration is over.
	Requests int64 `toml:"requests,omitempty" json:"requests,omitempty"`
	// Warmup runs load before the measurement window and discards it.
	Warmup Duration `toml:"warmup,omitempty" json:"warmup,omitempty"`
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
	Order string    `toml:"order,omitempty" json:"order,omitempty"`
	Steps []Request `toml:"steps" json:"steps"`
}

// Defaults of keys left empty.
const (
	DefaultMaxInflight = 4096
	DefaultTimeout     = 10 * time.Second
	DefaultDuration    = 10 * time.Second
)

// Duration is a time.Duration written as a string such as "30s" or
// "250ms"; it is the spec's own duration type.
type Duration = spec.Duration

// Validate checks every key and returns one error per bad key, each naming
// the key as it is written in a spec ("load.rate: must be > 0, got -5").
// An empty target is valid, as the runner may fill it in later.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &spec.KeyError{Key: "load." + key, Msg: fmt.Sprintf(format, args...)})
	}
	mode := c.mode()
	switch mode {
	case "open", "closed":
	default:
		bad("mode", "must be \"open\" or \"closed\", got %q", c.Mode)
	}
	switch c.protocol() {
	case "http", "h2c", "grpc":
	default:
		bad("protocol", "must be \"http\", \"h2c\" or \"grpc\", got %q", c.Protocol)
	}
	switch c.Arrival {
	case "", "constant", "poisson":
	default:
		bad("arrival", "must be \"constant\" or \"poisson\", got %q", c.Arrival)
	}
	if c.Target != "" {
		if err := c.checkTarget(); err != nil {
			bad("target", "%v", err)
		}
	}
	if c.Rate < 0 || (mode == "open" && c.Rate == 0 && len(c.Stages) == 0) {
		bad("rate", "must be > 0, got %v", c.Rate)
	}
	if c.Users < 0 || (mode == "closed" && c.Users == 0 && len(c.Stages) == 0) {
		bad("users", "must be > 0, got %d", c.Users)
	}
	if mode == "open" && c.Users != 0 {
		bad("users", "applies to mode \"closed\" only, got %d with mode \"open\"", c.Users)
	}
	if mode == "closed" && c.Rate != 0 {
		bad("rate", "applies to mode \"open\" only, got %v with mode \"closed\"", c.Rate)
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
	if c.SpawnRate < 0 {
		bad("spawn_rate", "must be >= 0, got %v", c.SpawnRate)
	}
	if c.Connections < 0 {
		bad("connections", "must be >= 0, got %d", c.Connections)
	}
	if c.MaxInflight < 0 {
		bad("max_inflight", "must be >= 0, got %d", c.MaxInflight)
	}
	for i, s := range c.Stages {
		key := fmt.Sprintf("stages[%d]", i)
		switch s.Type {
		case "ramp", "step":
		default:
			bad(key+".type", "must be \"ramp\" or \"step\", got %q", s.Type)
		}
		if s.Duration <= 0 {
			bad(key+".duration", "must be > 0, got %s", s.Duration)
		}
		if mode == "open" {
			if s.Rate < 0 {
				bad(key+".rate", "must be >= 0, got %v", s.Rate)
			}
			if s.Users != 0 {
				bad(key+".users", "applies to mode \"closed\" only")
			}
		} else {
			if s.Users < 0 {
				bad(key+".users", "must be >= 0, got %d", s.Users)
			}
			if s.Rate != 0 {
				bad(key+".rate", "applies to mode \"open\" only")
			}
		}
	}
	if c.Request != nil && c.Flow != nil {
		bad("flow", "set either [load.request] or [load.flow], not both")
	}
	if c.Request != nil {
		errs = append(errs, c.checkRequest("request", c.Request, nil)...)
	}
	if c.Flow != nil {
		switch c.Flow.Order {
		case "", "sequence", "weighted":
		default:
			bad("flow.order", "must be \"sequence\" or \"weighted\", got %q", c.Flow.Order)
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
			if c.Flow.Order != "weighted" {
				vars = known
			}
			errs = append(errs, c.checkRequest(key, st, vars)...)
			if st.Weight < 0 || (c.Flow.Order == "weighted" && st.Weight == 0) {
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
	return errors.Join(errs...)
}

func (c *Config) checkTarget() error {
	if c.protocol() == "grpc" {
		if strings.Contains(c.Target, "://") {
			u, err := url.Parse(c.Target)
			if err != nil || u.Host == "" {
				return fmt.Errorf("want host:port or grpc://host:port, got %q", c.Target)
			}
		}
		return nil
	}
	u, err := url.Parse(c.Target)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", c.Target, err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("want an http:// URL such as http://127.0.0.1:8080, got %q", c.Target)
	}
	return nil
}

// checkRequest validates r; vars, when not nil, holds the variables earlier
// steps extract, so a reference to any other is an error.
func (c *Config) checkRequest(key string, r *Request, vars map[string]bool) []error {
	var errs []error
	bad := func(k, format string, args ...any) {
		errs = append(errs, &spec.KeyError{Key: "load." + key + "." + k, Msg: fmt.Sprintf(format, args...)})
	}
	if c.protocol() == "grpc" {
		if !strings.Contains(strings.TrimPrefix(r.Method, "/"), "/") {
			bad("method", "want a gRPC method such as \"svclab.echo.Echo/Echo\", got %q", r.Method)
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
	} else {
		if r.Method != "" && !regexp.MustCompile(`^[A-Z]+$`).MatchString(r.Method) {
			bad("method", "want an HTTP method such as GET or POST, got %q", r.Method)
		}
		if r.Path != "" && !strings.HasPrefix(r.Path, "/") {
			bad("path", "must start with /, got %q", r.Path)
		}
		if r.ExpectStatus != 0 && (r.ExpectStatus < 100 || r.ExpectStatus > 599) {
			bad("expect_status", "must be an HTTP status 100-599, got %d", r.ExpectStatus)
		}
		if r.BodyBase64 != "" {
			bad("body_base64", "applies to gRPC only")
		}
	}
	if r.Name == "total" {
		bad("name", "\"total\" is reserved for all requests together")
	}
	for name, src := range r.Extract {
		kind, arg, ok := strings.Cut(src, ":")
		if !ok || arg == "" || (kind != "json" && kind != "header" && kind != "cookie") {
			bad("extract."+name, "want \"json:path\", \"header:Name\" or \"cookie:Name\", got %q", src)
		}
		if c.protocol() == "grpc" && kind != "json" {
			bad("extract."+name, "gRPC responses have json: fields only, got %q", src)
		}
	}
	if vars != nil {
		texts := []struct{ k, v string }{{"path", r.Path}, {"body", r.Body}}
		for h, v := range r.Headers {
			texts = append(texts, struct{ k, v string }{"headers." + h, v})
		}
		for _, t := range texts {
			for _, m := range varRef.FindAllStringSubmatch(t.v, -1) {
				if n := m[1]; n != "user" && n != "iteration" && !vars[n] {
					bad(t.k, "uses {{%s}}, which no earlier step extracts", n)
				}
			}
		}
	}
	return errs
}

func (c *Config) mode() string {
	if c.Mode == "" {
		return "open"
	}
	return c.Mode
}

func (c *Config) protocol() string {
	if c.Protocol == "" {
		return "http"
	}
	return c.Protocol
}

// opName is the operation name a request is reported under.
func (c *Config) opName(r *Request) string {
	if r.Name != "" {
		return r.Name
	}
	if c.protocol() == "grpc" {
		return strings.TrimPrefix(r.Method, "/")
	}
	m := r.Method
	if m == "" {
		m = "GET"
	}
	p := r.Path
	if p == "" {
		p = "/"
	}
	return m + " " + p
}

// MeasureDuration is the length of the measurement window: duration, or
// the stages' total, or DefaultDuration.
func (c *Config) MeasureDuration() time.Duration {
	if c.Duration > 0 {
		return c.Duration.D()
	}
	if len(c.Stages) > 0 {
		var d time.Duration
		for _, s := range c.Stages {
			d += s.Duration.D()
		}
		return d
	}
	return DefaultDuration
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
