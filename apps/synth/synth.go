// Package synth is the synthetic app: services described in the spec
// instead of written, each spending a configured amount of CPU, memory and
// waiting per request, calling other services with configured counts and
// probabilities, and answering with a response of a configured size. A
// spec lists the services under [app.services.<name>] or generates them
// with [app.graph] (a Barabási–Albert graph, as µBench does).
//
// Every service is one component implementing the one protobuf service
// svclab.synth.Service: the runtime tells components apart by name (each
// has its own in-process channel, listener, certificate and mesh labels),
// so placements, transports, replicas and every other factor apply to
// synth services as to written ones.
package synth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	synthpb "github.com/svclab/svclab/proto/synth"
	"github.com/svclab/svclab/svc"
)

// Name is the app.name of this app.
const Name = "synth"

// Call modes: how one request's calls are made.
const (
	Sequential = "sequential"
	Parallel   = "parallel"
)

// Limits that keep a described topology within what one machine deploys.
const (
	// MaxServices bounds the services of one app, listed or generated.
	MaxServices = 5000
	// MaxCallsPerRequest bounds the calls one request of the entry is
	// expected to make, over all services: a graph whose paths multiply
	// (every service calling several that call several) is refused
	// before it floods the machine.
	MaxCallsPerRequest = 100_000
	// MaxDepth bounds app.max_depth.
	MaxDepth = 64
)

func init() {
	svc.Register(&svc.App{
		Name:      Name,
		Summary:   "services described in the spec: CPU, memory and waiting per request, calls, response sizes; or a generated graph",
		NewConfig: func() svc.Config { return &Config{} },
	})
}

// Config is the [app] table of a synth spec.
type Config struct {
	// EntryName is the service clients call (app.entry); a generated
	// graph's default is its first service, s0.
	EntryName string `toml:"entry" json:"entry,omitempty"`
	// Seed seeds each service's draws from its distributions; each
	// service's source is this seed mixed with the service's name.
	Seed uint64 `toml:"seed" json:"seed,omitempty"`
	// MaxDepth, when above zero, stops calls that many calls away from
	// the client: the bound that lets a spec's calls form a cycle.
	MaxDepth int `toml:"max_depth" json:"max_depth,omitempty"`
	// Services are the services by name ([app.services.<name>]).
	Services map[string]*Service `toml:"services" json:"services,omitempty"`
	// Graph generates the services instead ([app.graph]).
	Graph *Graph `toml:"graph" json:"graph,omitempty"`
	// Paths, when given, are the default requests: each a call tree the
	// request carries and the services follow instead of their calls'
	// counts and probabilities (parsePath's notation).
	Paths []string `toml:"paths" json:"paths,omitempty"`

	// services are the services in force: Services, or those Graph
	// generated. Validate sets them.
	services map[string]*Service
	// order is the services' names from the entry, breadth first, then
	// those the entry cannot reach, by name.
	order []string
	// plans are Paths, parsed.
	plans []*synthpb.Plan
}

// Service is one service's description.
type Service struct {
	// Work is what the service spends on every request before its calls.
	Work Work `toml:"work" json:"work"`
	// Response is the size of the answer: the protobuf encoding of the
	// response message is exactly this many bytes.
	Response Size `toml:"response" json:"response"`
	// Calls are the calls the service makes for every request, in order.
	Calls []Call `toml:"calls" json:"calls,omitempty"`
	// Mode is Sequential (the default) or Parallel.
	Mode string `toml:"mode" json:"mode,omitempty"`
}

// Work is a service's work per request; each value is a constant or a
// distribution drawn anew for every request.
type Work struct {
	// CPU is busy time on the serving thread, measured with the thread's
	// own CPU clock.
	CPU Duration `toml:"cpu" json:"cpu"`
	// Memory is bytes allocated, every page written, and let go.
	Memory Size `toml:"memory" json:"memory"`
	// Sleep is a wait without CPU, as for I/O.
	Sleep Duration `toml:"sleep" json:"sleep"`
}

// Call is one edge of the call graph.
type Call struct {
	// To names the service called.
	To string `toml:"to" json:"to"`
	// Count is how many calls a request makes when the edge is taken
	// (default 1). A fraction is one more call with that probability:
	// 1.4 is one call, and a second 40% of the time.
	Count *float64 `toml:"count" json:"count,omitempty"`
	// Probability is the chance a request takes the edge (default 1).
	Probability *float64 `toml:"probability" json:"probability,omitempty"`
}

// count and probability are the edge's values with their defaults.
func (c Call) count() float64 {
	if c.Count == nil {
		return 1
	}
	return *c.Count
}

func (c Call) probability() float64 {
	if c.Probability == nil {
		return 1
	}
	return *c.Probability
}

// countOK and probabilityOK report whether the edge's values are in
// their ranges.
func (c Call) countOK() bool {
	n := c.count()
	return n >= 0 && n <= 1000
}

func (c Call) probabilityOK() bool {
	p := c.probability()
	return p >= 0 && p <= 1
}

// serviceName is what a service may be called: it is a component name,
// which placements join with "+" and the kube deployer makes a DNS label
// of.
var serviceName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,62}$`)

// Validate checks the config and, for a graph, generates the services.
// Every problem is reported, each at its key, in one pass: a check is
// left out only when it depends on a value found wrong (the cycles run
// over the calls whose callee is known; a path's calls are checked when
// the entry is known; a generated graph's entry and paths when its shape
// is right).
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, svc.KeyErrorf(key, format, args...))
	}
	depthOK := c.MaxDepth >= 0 && c.MaxDepth <= MaxDepth
	if !depthOK {
		bad("max_depth", "must be between 0 (no bound) and %d, got %d", MaxDepth, c.MaxDepth)
	}
	for name, s := range c.Services {
		if s == nil {
			// The host's JSON may say null for a service with no keys.
			c.Services[name] = &Service{}
		}
	}
	// c.services stays nil when the services in force are not known.
	c.services = nil
	prefix := "services."
	// drawsOK: the counts and probabilities of the calls are known.
	drawsOK := true
	switch {
	case c.Graph != nil && c.Services != nil:
		bad("graph", "give either [app.services.<name>] or [app.graph], not both")
		// Which services are meant is not known: each table is checked
		// on its own.
		gerrs, _ := c.Graph.validate()
		errs = append(errs, gerrs...)
		errs = append(errs, validateServices(c.Services)...)
	case c.Graph != nil:
		gerrs, wrong := c.Graph.validate()
		errs = append(errs, gerrs...)
		if shaped(wrong) {
			c.services = c.Graph.generate()
			drawsOK = !wrong["count"] && !wrong["probability"]
			if c.EntryName == "" {
				c.EntryName = graphName(0)
			}
			prefix = "graph."
		}
	case len(c.Services) == 0:
		bad("services", "missing: describe the services under [app.services.<name>], or generate them with [app.graph]")
	default:
		c.services = c.Services
		if len(c.services) > MaxServices {
			bad("services", "%d services: at most %d deploy on one machine", len(c.services), MaxServices)
		}
		// A generated service is right by construction from the keys
		// of [app.graph], and has no key of its own to name: only
		// listed ones are checked.
		errs = append(errs, validateServices(c.services)...)
	}
	_, entryOK := c.services[c.EntryName]
	if c.services != nil {
		names := slices.Sorted(maps.Keys(c.services))
		if c.EntryName == "" {
			bad("entry", "missing: name the service clients call (one of %s)", shortList(names))
		} else if !entryOK {
			bad("entry", "unknown service %q%s", c.EntryName, svc.DidYouMean(c.EntryName, names))
		}
	}
	c.order = c.callOrder()
	c.plans = nil
	for i, text := range c.Paths {
		plan, err := parsePath(text)
		if err == nil && entryOK {
			err = c.checkPath(c.EntryName, plan)
		}
		if err != nil {
			bad(fmt.Sprintf("paths[%d]", i), "%v", err)
			continue
		}
		c.plans = append(c.plans, plan)
	}
	var cycles []error
	if c.MaxDepth == 0 {
		cycles = c.cycles(prefix)
		errs = append(errs, cycles...)
	}
	// Calls whose count or probability is wrong, or whose callee is
	// unknown, are left out of the expectation: what it counts is then
	// the least a request makes, whatever they are corrected to.
	if depthOK && entryOK && drawsOK && len(cycles) == 0 && c.expectedCalls() > MaxCallsPerRequest {
		key := "graph"
		if c.Graph == nil {
			key = "services." + keyPart(c.EntryName)
		}
		bad(key, "a request of %s is expected to make more than %d calls, the most one machine is allowed; lower counts, probabilities or max_depth", c.EntryName, MaxCallsPerRequest)
	}
	return errors.Join(errs...)
}

// validateServices checks each listed service, by name.
func validateServices(all map[string]*Service) []error {
	var errs []error
	names := slices.Sorted(maps.Keys(all))
	for _, name := range names {
		errs = append(errs, all[name].validate("services."+keyPart(name), name, names, all)...)
	}
	return errs
}

// validate checks one service written at key.
func (s *Service) validate(key, name string, names []string, all map[string]*Service) []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, svc.KeyErrorf(key, format, args...))
	}
	if !serviceName.MatchString(name) {
		bad(key, "service name %q must start with a letter and hold only letters, digits, '_' and '-' (at most 63)", name)
	}
	if s.Response.kind == "" && s.Response.a == 1 {
		bad(key+".response", "must be 0 or at least 2 bytes: a non-empty message holds a field's tag and length")
	}
	switch s.Mode {
	case "", Sequential, Parallel:
	default:
		bad(key+".mode", "must be %q or %q, got %q", Sequential, Parallel, s.Mode)
	}
	for i, call := range s.Calls {
		ck := fmt.Sprintf("%s.calls[%d]", key, i)
		switch _, ok := all[call.To]; {
		case call.To == "":
			bad(ck+".to", "missing: name the service called")
		case !ok:
			bad(ck+".to", "unknown service %q%s", call.To, svc.DidYouMean(call.To, names))
		}
		if !call.countOK() {
			bad(ck+".count", "must be between 0 and 1000, got %g", call.count())
		}
		if !call.probabilityOK() {
			bad(ck+".probability", "must be between 0 and 1, got %g", call.probability())
		}
	}
	return errs
}

// keyPart quotes a service name as the spec's index of keys does, so
// that an error about it finds its line.
func keyPart(name string) string {
	if name == "" || strings.ContainsAny(name, `. "`) {
		return strconv.Quote(name)
	}
	return name
}

func shortList(names []string) string {
	if len(names) > 8 {
		return strings.Join(names[:8], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

// callees lists the services s calls, once each, in order of first call.
func (s *Service) callees() []string {
	var out []string
	for _, c := range s.Calls {
		if !slices.Contains(out, c.To) {
			out = append(out, c.To)
		}
	}
	return out
}

// callOrder lists the services breadth first from the entry, then the
// unreachable ones by name. An unknown entry or callee is left out (an
// error says it is unknown).
func (c *Config) callOrder() []string {
	seen := map[string]bool{}
	var order []string
	if _, ok := c.services[c.EntryName]; ok {
		seen[c.EntryName] = true
		order = append(order, c.EntryName)
	}
	for i := 0; i < len(order); i++ {
		for _, to := range c.services[order[i]].callees() {
			if _, known := c.services[to]; known && !seen[to] {
				seen[to] = true
				order = append(order, to)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.services)) {
		if !seen[name] {
			order = append(order, name)
		}
	}
	return order
}

// cycles reports every call that closes a cycle, at its key: without
// app.max_depth a request would go round forever. A call to an unknown
// service closes none (its error says it is unknown).
func (c *Config) cycles(prefix string) []error {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var errs []error
	var visit func(name string)
	visit = func(name string) {
		state[name] = open
		path = append(path, name)
		for i, call := range c.services[name].Calls {
			if _, known := c.services[call.To]; !known {
				continue
			}
			switch state[call.To] {
			case unseen:
				visit(call.To)
			case open:
				from := slices.Index(path, call.To)
				loop := append(slices.Clone(path[from:]), call.To)
				key := fmt.Sprintf("services.%s.calls[%d].to", keyPart(name), i)
				if prefix == "graph." {
					key = "graph"
				}
				errs = append(errs, svc.KeyErrorf(key, "calls %q, which closes a cycle (%s); set app.max_depth to bound how deep a request goes", call.To, strings.Join(loop, " → ")))
			}
		}
		path = path[:len(path)-1]
		state[name] = done
	}
	for _, name := range c.order {
		if state[name] == unseen {
			visit(name)
		}
	}
	return errs
}

// expectedCalls is the number of calls one request of the entry makes on
// average, over all services, each edge counting its mean count times its
// probability: by levels of depth, so that a cycle under max_depth is
// counted to its bound. It stops early once past the limit.
func (c *Config) expectedCalls() float64 {
	depth := c.MaxDepth
	if depth == 0 {
		// Without a cycle no path is longer than the services.
		depth = len(c.services)
	}
	level := map[string]float64{c.EntryName: 1}
	total := 0.0
	for d := 0; d < depth && len(level) > 0; d++ {
		next := map[string]float64{}
		for name, visits := range level {
			for _, call := range c.services[name].Calls {
				if _, known := c.services[call.To]; !known || !call.countOK() || !call.probabilityOK() {
					continue
				}
				n := visits * call.count() * call.probability()
				if n > 0 {
					next[call.To] += n
					total += n
				}
			}
		}
		if total > MaxCallsPerRequest {
			return total
		}
		level = next
	}
	return total
}

// Entry is the configured entry service.
func (c *Config) Entry() string { return c.EntryName }

// ServicesInForce are the services by name: those listed, or those
// generated. Valid after Validate.
func (c *Config) ServicesInForce() map[string]*Service { return c.services }

// Order lists the services from the entry, breadth first. Valid after
// Validate.
func (c *Config) Order() []string { return c.order }

// Components are the services, from the entry breadth first.
func (c *Config) Components() []svc.Component {
	comps := make([]svc.Component, 0, len(c.order))
	for _, name := range c.order {
		s := c.services[name]
		comps = append(comps, svc.Component{
			Name:    name,
			Service: &synthpb.Service_ServiceDesc,
			Deps:    s.callees(),
			New: func(_ context.Context, deps svc.Deps) (any, error) {
				return newServer(name, s, c.Seed, c.MaxDepth, deps), nil
			},
		})
	}
	return comps
}

// Requests is one call of the entry, or with app.paths one call per
// path, named path1, path2, ... When the entry's response size is a
// constant, the answer's size is checked.
func (c *Config) Requests() []svc.Request {
	var check func(proto.Message) error
	if resp := c.services[c.EntryName].Response; resp.kind == "" {
		want := int(resp.a)
		check = func(m proto.Message) error {
			if got := proto.Size(m); got != want {
				return fmt.Errorf("response of %d bytes, want %d", got, want)
			}
			return nil
		}
	}
	request := func(name string, m *synthpb.CallRequest) svc.Request {
		return svc.Request{
			Name:        name,
			Method:      synthpb.Service_Call_FullMethodName,
			Message:     m,
			NewResponse: func() proto.Message { return new(synthpb.CallResponse) },
			Check:       check,
		}
	}
	if len(c.plans) == 0 {
		return []svc.Request{request("call", &synthpb.CallRequest{})}
	}
	out := make([]svc.Request, len(c.plans))
	for i, plan := range c.plans {
		out[i] = request(fmt.Sprintf("path%d", i+1), &synthpb.CallRequest{Follow: true, Plan: plan})
	}
	return out
}

// seedOf is a service's own seed: the app's, mixed with its name, so that
// services draw apart and the same spec draws alike on every machine.
func seedOf(seed uint64, name string) (uint64, uint64) {
	h := fnv.New64a()
	h.Write([]byte(name))
	return seed, h.Sum64()
}

// server is one running service.
type server struct {
	synthpb.UnimplementedServiceServer
	name     string
	svc      *Service
	maxDepth uint32
	parallel bool
	edges    []edge
	clients  map[string]synthpb.ServiceClient // by callee, for paths
	// mu guards src, which is not safe for concurrent use.
	mu  sync.Mutex
	src rand.Source
}

type edge struct {
	Call
	client synthpb.ServiceClient
}

func newServer(name string, svc *Service, seed uint64, maxDepth int, deps svc.Deps) *server {
	s := &server{
		name:     name,
		svc:      svc,
		maxDepth: uint32(maxDepth),
		parallel: svc.Mode == Parallel,
		src:      rand.NewPCG(seedOf(seed, name)),
		clients:  map[string]synthpb.ServiceClient{},
	}
	for _, to := range svc.callees() {
		s.clients[to] = synthpb.NewServiceClient(deps.Conn(to))
	}
	for _, call := range svc.Calls {
		s.edges = append(s.edges, edge{Call: call, client: s.clients[call.To]})
	}
	return s
}

// draw is what one request does, drawn from the service's distributions.
type draw struct {
	work  [3]float64 // cpu (ns), memory (bytes), sleep (ns)
	size  int
	calls []int // per edge, how many calls
}

func (s *server) draw() draw {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := draw{
		work: [3]float64{s.svc.Work.CPU.sample(s.src), s.svc.Work.Memory.sample(s.src), s.svc.Work.Sleep.sample(s.src)},
		size: s.svc.Response.Sample(s.src),
	}
	if len(s.edges) > 0 {
		d.calls = make([]int, len(s.edges))
		for i, e := range s.edges {
			if p := e.probability(); p < 1 && uniform(s.src) >= p {
				continue
			}
			n := e.count()
			whole := math.Floor(n)
			if frac := n - whole; frac > 0 && uniform(s.src) < frac {
				whole++
			}
			d.calls[i] = int(whole)
		}
	}
	return d
}

// uniform is a draw in [0, 1).
func uniform(src rand.Source) float64 { return float64(src.Uint64()>>11) / (1 << 53) }

// Call does the service's work, then its calls, then answers.
func (s *server) Call(ctx context.Context, in *synthpb.CallRequest) (*synthpb.CallResponse, error) {
	if err := svc.Sleep(ctx, s.name, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	d := s.draw()
	burnCPU(time.Duration(d.work[0]))
	touchMemory(int(d.work[1]))
	// The work's sleep is the test knob's wait, cut short alike.
	if err := svc.Sleep(ctx, s.name, time.Duration(d.work[2]).Microseconds()); err != nil {
		return nil, err
	}
	var calls []outCall
	switch {
	case in.GetFollow():
		for _, step := range in.GetPlan().GetCalls() {
			client, ok := s.clients[step.GetTo()]
			if !ok {
				return nil, status.Errorf(codes.InvalidArgument, "%s: the request's path calls %s, which %s does not call", s.name, step.GetTo(), s.name)
			}
			calls = append(calls, outCall{client, &synthpb.CallRequest{Depth: in.GetDepth() + 1, Follow: true, Plan: step.GetPlan()}})
		}
	case s.maxDepth == 0 || in.GetDepth() < s.maxDepth:
		req := &synthpb.CallRequest{Depth: in.GetDepth() + 1}
		for i, n := range d.calls {
			for range n {
				calls = append(calls, outCall{s.edges[i].client, req})
			}
		}
	}
	if err := s.call(ctx, calls); err != nil {
		return nil, err
	}
	return Response(d.size), nil
}

// outCall is one call a request makes.
type outCall struct {
	client synthpb.ServiceClient
	req    *synthpb.CallRequest
}

// call makes the calls, one after another or all at once.
func (s *server) call(ctx context.Context, calls []outCall) error {
	// A response may be larger than grpc-go's default 4 MB limit; a
	// spec that asks for one means it.
	opt := grpc.MaxCallRecvMsgSize(math.MaxInt32)
	if !s.parallel {
		for _, c := range calls {
			if _, err := c.client.Call(ctx, c.req, opt); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.client.Call(ctx, c.req, opt); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}
