package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/graph/graphs/gen"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/svclab/svclab/svc"
)

// KindBarabasiAlbert is the one generator: preferential attachment, as
// µBench's service graphs.
const KindBarabasiAlbert = "barabasi_albert"

// Graph is [app.graph]: services generated instead of listed. The same
// keys give the same services on every machine.
type Graph struct {
	// Kind is the generator, KindBarabasiAlbert.
	Kind string `toml:"kind" json:"kind"`
	// Services is how many services to generate, named s0 (the entry) to
	// s<services-1>.
	Services int `toml:"services" json:"services"`
	// M is how many earlier services each new one is attached to: each
	// of them calls it.
	M int `toml:"m" json:"m"`
	// Seed seeds the graph and the draws of its values.
	Seed uint64 `toml:"seed" json:"seed"`
	// Work, Response, Count and Probability are distributions each
	// service's (or edge's) value is drawn from once, at generation; a
	// generated service's values are constants.
	Work     Work `toml:"work" json:"work"`
	Response Size `toml:"response" json:"response"`
	// Count is each edge's calls per request; default 1.
	Count *Number `toml:"count" json:"count,omitempty"`
	// Probability defaults to 1: every edge taken.
	Probability *Number `toml:"probability" json:"probability,omitempty"`
	// Mode is every service's call mode.
	Mode string `toml:"mode" json:"mode,omitempty"`
}

// graphName names generated service i.
func graphName(i int) string { return "s" + strconv.Itoa(i) }

// validate checks the generator's keys, each at its own, and returns
// the keys found wrong (by their name in [app.graph]), so that the checks
// of what the graph generates can go on beside these errors where they
// do not depend on a wrong key.
func (g *Graph) validate() (errs []error, wrong map[string]bool) {
	wrong = map[string]bool{}
	bad := func(key, format string, args ...any) {
		wrong[key] = true
		errs = append(errs, svc.KeyErrorf("graph."+key, format, args...))
	}
	if g.Kind != KindBarabasiAlbert {
		bad("kind", "must be %q, got %q", KindBarabasiAlbert, g.Kind)
	}
	if g.Services < 2 || g.Services > MaxServices {
		bad("services", "must be between 2 and %d (what one machine deploys), got %d", MaxServices, g.Services)
	}
	if g.M < 1 || (g.Services >= 2 && g.M >= g.Services) {
		bad("m", "must be at least 1 and below services (%d), got %d", g.Services, g.M)
	}
	if g.Count != nil && g.Count.max() > 1000 {
		bad("count", "must stay within 0 to 1000 calls an edge; %s can exceed it", g.Count)
	}
	if g.Probability != nil && g.Probability.max() > 1 {
		bad("probability", "must stay within 0 and 1: write a constant or uniform(min, max), got %s", g.Probability)
	}
	switch g.Mode {
	case "", Sequential, Parallel:
	default:
		bad("mode", "must be %q or %q, got %q", Sequential, Parallel, g.Mode)
	}
	return errs, wrong
}

// shaped reports whether the keys the graph's edges depend on are right,
// wrong being what validate found: generate can run.
func shaped(wrong map[string]bool) bool {
	return !wrong["kind"] && !wrong["services"] && !wrong["m"]
}

// generate makes the services: a Barabási–Albert graph (gonum's
// preferential attachment) whose every edge points from the older service
// to the newer, so that s0 is the root and no call goes back, with each
// service's values drawn from the graph's distributions. The first m
// services have no edge among them in the model; s0 calls s1 to s<m-1> so
// that every service can be reached from the entry.
func (g *Graph) generate() map[string]*Service {
	src := rand.NewPCG(g.Seed, 0x5eed5eed)
	u := simple.NewUndirectedGraph()
	if err := gen.PreferentialAttachment(u, g.Services, g.M, src); err != nil {
		// validate keeps n > m, the generator's only condition.
		panic(fmt.Sprintf("synth: graph: %v", err))
	}
	callees := make([][]int, g.Services)
	for i := 1; i < g.M; i++ {
		callees[0] = append(callees[0], i)
	}
	for v := g.M; v < g.Services; v++ {
		nodes := u.From(int64(v))
		for nodes.Next() {
			if w := int(nodes.Node().ID()); w < v {
				callees[w] = append(callees[w], v)
			}
		}
	}
	prob := Number{dist{a: 1}}
	if g.Probability != nil {
		prob = *g.Probability
	}
	count := Number{dist{a: 1}}
	if g.Count != nil {
		count = *g.Count
	}
	services := make(map[string]*Service, g.Services)
	for i := range g.Services {
		s := &Service{
			Work: Work{
				CPU:    Duration{dist{a: microseconds(g.Work.CPU.sample(src))}},
				Memory: Size{dist{a: math.Round(g.Work.Memory.sample(src))}},
				Sleep:  Duration{dist{a: microseconds(g.Work.Sleep.sample(src))}},
			},
			Response: Size{dist{a: max(math.Round(g.Response.sample(src)), 0)}},
			Mode:     g.Mode,
		}
		if s.Response.a == 1 {
			s.Response.a = 2
		}
		slices.Sort(callees[i])
		for _, to := range callees[i] {
			c := min(hundredths(count.sample(src)), 1000)
			p := min(hundredths(prob.sample(src)), 1)
			s.Calls = append(s.Calls, Call{To: graphName(to), Count: &c, Probability: &p})
		}
		services[graphName(i)] = s
	}
	return services
}

// microseconds and hundredths round a drawn value, so that a generated
// service prints short and reads back the same.
func microseconds(ns float64) float64 { return math.Round(ns/1e3) * 1e3 }

func hundredths(v float64) float64 { return math.Round(v*100) / 100 }
