package synth

import (
	"fmt"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"

	synthpb "github.com/svclab/svclab/proto/synth"
)

// TOML writes the services in force as an [app] table that svclab reads
// back to the same services: a generated graph frozen, for a user to keep
// and edit. Call Validate first.
func (c *Config) TOML() []byte {
	var b strings.Builder
	if len(c.plans) > 0 {
		// The default requests follow the paths, not the graph's draws.
		const named = 6
		var each []string
		for i, p := range c.plans[:min(len(c.plans), named)] {
			n := planCalls(p)
			switch {
			case i > 0:
				each = append(each, fmt.Sprintf("path%d %d", i+1, n))
			case n == 1:
				each = append(each, "path1 makes 1 call")
			default:
				each = append(each, fmt.Sprintf("path1 makes %d calls", n))
			}
		}
		if len(c.plans) > named {
			each = append(each, fmt.Sprintf("and %d more paths", len(c.plans)-named))
		}
		fmt.Fprintf(&b, "# %d services; requests of %s follow app.paths: %s; one drawn from the graph would make %.4g calls on average.\n",
			len(c.services), c.EntryName, strings.Join(each, ", "), c.expectedCalls())
	} else {
		fmt.Fprintf(&b, "# %d services; a request of %s makes %.4g calls on average.\n", len(c.services), c.EntryName, c.expectedCalls())
	}
	b.WriteString("[app]\nname = " + strconv.Quote(Name) + "\n")
	b.WriteString("entry = " + strconv.Quote(c.EntryName) + "\n")
	if c.Seed != 0 {
		fmt.Fprintf(&b, "seed = %d\n", c.Seed)
	}
	if c.MaxDepth != 0 {
		fmt.Fprintf(&b, "max_depth = %d\n", c.MaxDepth)
	}
	if len(c.Paths) > 0 {
		b.WriteString("paths = [\n")
		for _, p := range c.Paths {
			b.WriteString("  " + strconv.Quote(p) + ",\n")
		}
		b.WriteString("]\n")
	}
	for _, name := range c.order {
		s := c.services[name]
		fmt.Fprintf(&b, "\n[app.services.%s]\n", keyPart(name))
		var work []string
		for _, w := range []struct {
			key  string
			zero bool
			text string
		}{
			{"cpu", s.Work.CPU.zero(), s.Work.CPU.String()},
			{"memory", s.Work.Memory.zero(), s.Work.Memory.String()},
			{"sleep", s.Work.Sleep.zero(), s.Work.Sleep.String()},
		} {
			if !w.zero {
				work = append(work, w.key+" = "+strconv.Quote(w.text))
			}
		}
		if len(work) > 0 {
			b.WriteString("work = { " + strings.Join(work, ", ") + " }\n")
		}
		if !s.Response.zero() {
			b.WriteString("response = " + strconv.Quote(s.Response.String()) + "\n")
		}
		if s.Mode != "" {
			b.WriteString("mode = " + strconv.Quote(s.Mode) + "\n")
		}
		if len(s.Calls) > 0 {
			b.WriteString("calls = [\n")
			for _, call := range s.Calls {
				fmt.Fprintf(&b, "  { to = %s", strconv.Quote(call.To))
				if call.Count != nil {
					b.WriteString(", count = " + number(*call.Count))
				}
				if call.Probability != nil {
					b.WriteString(", probability = " + number(*call.Probability))
				}
				b.WriteString(" },\n")
			}
			b.WriteString("]\n")
		}
	}
	return []byte(b.String())
}

func number(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Dot writes the call graph in Graphviz's language: a node per service
// with its work and response, an edge per callee with its count and
// probability. Call Validate first.
func (c *Config) Dot() ([]byte, error) {
	g := simple.NewDirectedGraph()
	nodes := map[string]*dotNode{}
	for i, name := range c.order {
		n := &dotNode{id: int64(i), name: name, svc: c.services[name], entry: name == c.EntryName}
		nodes[name] = n
		g.AddNode(n)
	}
	for _, name := range c.order {
		for _, call := range c.services[name].Calls {
			from, to := nodes[name], nodes[call.To]
			label := edgeLabel(call)
			if e, ok := g.Edge(from.ID(), to.ID()).(*dotEdge); ok {
				// Two calls entries to one service: one edge, both labels.
				e.label += "; " + label
				continue
			}
			if from == to {
				// gonum's simple graphs hold no self-loop; say it on the node.
				from.self = append(from.self, label)
				continue
			}
			g.SetEdge(&dotEdge{from: from, to: to, label: label})
		}
	}
	return dot.Marshal(g, Name, "", "  ")
}

func edgeLabel(call Call) string {
	var parts []string
	if n := call.count(); n != 1 {
		parts = append(parts, "×"+number(n))
	}
	if p := call.probability(); p != 1 {
		parts = append(parts, "p="+number(p))
	}
	return strings.Join(parts, " ")
}

type dotNode struct {
	id    int64
	name  string
	svc   *Service
	entry bool
	self  []string // labels of calls to itself
}

func (n *dotNode) ID() int64     { return n.id }
func (n *dotNode) DOTID() string { return n.name }
func (n *dotNode) label() string {
	lines := []string{n.name}
	var work []string
	for _, w := range []struct {
		key string
		d   dist
		q   quantity
	}{{"cpu", n.svc.Work.CPU.dist, qDuration}, {"mem", n.svc.Work.Memory.dist, qSize}, {"sleep", n.svc.Work.Sleep.dist, qDuration}, {"resp", n.svc.Response.dist, qSize}} {
		if !w.d.zero() {
			work = append(work, w.key+" "+w.d.text(w.q))
		}
	}
	if len(work) > 0 {
		lines = append(lines, strings.Join(work, ", "))
	}
	if n.svc.Mode == Parallel {
		lines = append(lines, "parallel")
	}
	for _, s := range n.self {
		lines = append(lines, "calls itself "+s)
	}
	return strings.Join(lines, `\n`)
}

func (n *dotNode) Attributes() []encoding.Attribute {
	attrs := []encoding.Attribute{{Key: "label", Value: dotQuote(n.label())}}
	if n.entry {
		attrs = append(attrs, encoding.Attribute{Key: "shape", Value: "doublecircle"})
	}
	return attrs
}

type dotEdge struct {
	from, to *dotNode
	label    string
}

func (e *dotEdge) From() graph.Node         { return e.from }
func (e *dotEdge) To() graph.Node           { return e.to }
func (e *dotEdge) ReversedEdge() graph.Edge { return &dotEdge{from: e.to, to: e.from, label: e.label} }
func (e *dotEdge) Attributes() []encoding.Attribute {
	if e.label == "" {
		return nil
	}
	return []encoding.Attribute{{Key: "label", Value: dotQuote(e.label)}}
}

// dotQuote makes a Graphviz string of s, keeping its \n line breaks.
func dotQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// planCalls counts the calls a path makes, at every depth.
func planCalls(p *synthpb.Plan) int {
	n := 0
	for _, st := range p.GetCalls() {
		n += 1 + planCalls(st.GetPlan())
	}
	return n
}
