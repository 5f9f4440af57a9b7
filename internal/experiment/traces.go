package experiment

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/english"
	"github.com/svclab/svclab/internal/warn"
)

// TracesFile is the per-hop latency breakdown of a run with deploy.tracing.
const TracesFile = "hops.parquet"

// HopRow is one row of hops.parquet: one server span, the time a component
// spent on one call, and what its caller saw of it.
type HopRow struct {
	TraceID string `parquet:"trace_id"`
	// Depth is 0 for the entry, 1 for what it calls, and so on.
	Depth int32 `parquet:"depth"`
	// Hop is "client→component", "caller→component", e.g. "hop1→hop2".
	Hop       string `parquet:"hop"`
	Component string `parquet:"component"`
	Method    string `parquet:"method"`
	// StartS is the server span's start in seconds since the first span.
	StartS float64 `parquet:"start_s"`
	// ServerUS is the server span's duration; SelfUS the part not spent
	// in calls the component made (its own work); ClientUS the caller's
	// client span (0 at the entry, whose caller is not traced); WireUS
	// ClientUS minus ServerUS: the transport's encoding, the network and
	// TLS, both ways.
	ServerUS float64 `parquet:"server_us"`
	SelfUS   float64 `parquet:"self_us"`
	ClientUS float64 `parquet:"client_us"`
	WireUS   float64 `parquet:"wire_us"`
	Error    bool    `parquet:"error"`
	// With proxies that emit their own spans (Envoy sidecars under
	// deploy.tracing): ProxyOutUS is the caller's proxy's span, ProxyInUS
	// the callee's (node mode: the one proxy's two spans), and ProxyUS the
	// time from the first proxy's span start to its end, less the server
	// span: what the proxies and the legs between them took of WireUS
	// (at the entry, where the client is not traced, of nothing: the
	// entry proxy's own time). All 0 without proxy spans.
	ProxyOutUS float64 `parquet:"proxy_out_us"`
	ProxyInUS  float64 `parquet:"proxy_in_us"`
	ProxyUS    float64 `parquet:"proxy_us"`
}

// TraceCheck is what svclab verifies of a run's traces: that the backend
// got every span that was sent.
type TraceCheck struct {
	Traces int `json:"traces"`
	Spans  int `json:"spans"`
	// Sent is the calls the load generator made on the entry over the
	// run's transport; -1 when it went through the gateway or a target of
	// its own, where svclab does not count them.
	Sent int64 `json:"sent"`
	// Ratio is deploy.tracing.
	Ratio float64 `json:"ratio"`
	// Orphans are spans whose parent is missing from their trace, and
	// Unanswered client spans with no server span under them: each is a
	// span dropped on the way.
	Orphans    int `json:"orphans"`
	Unanswered int `json:"unanswered"`
	// Roots are traces' root spans; one per traced request.
	Roots int `json:"roots"`
}

// Problems lists what the check found wrong: spans dropped, or (at ratio
// 1) a trace count other than the calls sent.
func (c TraceCheck) Problems() []warn.Warning {
	var out []warn.Warning
	add := func(format string, args ...any) {
		out = append(out, warn.Warning{Kind: warn.SpansDropped, Text: fmt.Sprintf(format, args...)})
	}
	if c.Orphans > 0 {
		add("%s lost %s parent: spans were dropped", english.Count(c.Orphans, "span"), english.Agree(c.Orphans, "its", "their"))
	}
	if c.Unanswered > 0 {
		add("%s %s no server span under %s: spans were dropped", english.Count(c.Unanswered, "client or proxy span"), english.Agree(c.Unanswered, "has", "have"), english.Agree(c.Unanswered, "it", "them"))
	}
	if c.Roots != c.Traces {
		add("%s but %s", english.Count(c.Traces, "trace"), english.Count(c.Roots, "root span"))
	}
	if c.Ratio == 1 && c.Sent >= 0 && int64(c.Traces) != c.Sent {
		add("%s sent at sampling 1.0 but %s arrived", english.Count(int(c.Sent), "call"), english.Count(c.Traces, "trace"))
	}
	return out
}

// callCounter counts the calls a client makes, as a client interceptor.
type callCounter struct {
	n        atomic.Int64
	attached bool // set when the target's client uses it
}

// total is the calls counted, or -1 when the counter was not attached.
func (c *callCounter) total() int64 {
	if !c.attached {
		return -1
	}
	return c.n.Load()
}

func (c *callCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.n.Add(1)
	return invoker(ctx, method, req, reply, cc, opts...)
}

// AnalyzeTraces checks spans and breaks each request down hop by hop.
func AnalyzeTraces(spans []deploy.Span, sent int64, ratio float64) (TraceCheck, []HopRow) {
	c := TraceCheck{Spans: len(spans), Sent: sent, Ratio: ratio}
	byTrace := map[string]map[string]*deploy.Span{}
	children := map[string][]*deploy.Span{} // trace/span → children
	for i := range spans {
		s := &spans[i]
		if byTrace[s.TraceID] == nil {
			byTrace[s.TraceID] = map[string]*deploy.Span{}
		}
		byTrace[s.TraceID][s.SpanID] = s
		if s.ParentID != "" {
			k := s.TraceID + "/" + s.ParentID
			children[k] = append(children[k], s)
		}
	}
	c.Traces = len(byTrace)
	var rows []HopRow
	var t0 = spans0(spans)
	for i := range spans {
		s := &spans[i]
		kids := children[s.TraceID+"/"+s.SpanID]
		if s.ParentID == "" {
			c.Roots++
		} else if byTrace[s.TraceID][s.ParentID] == nil {
			c.Orphans++
		}
		if (s.Kind == "client" || s.Proxy) && !answered(s, children) {
			c.Unanswered++
		}
		if s.Kind != "server" || s.Proxy {
			continue
		}
		r := HopRow{
			TraceID: s.TraceID, Component: s.Component, Method: s.Name,
			StartS:   s.Start.Sub(t0).Seconds(),
			ServerUS: us(s.Duration), Error: s.Error,
		}
		r.SelfUS = us(s.Duration - callTime(s, kids))
		caller := "client"
		p, proxies := appParent(byTrace[s.TraceID], s)
		for _, px := range proxies {
			if px.Kind == "client" {
				r.ProxyOutUS = us(px.Duration)
			} else {
				r.ProxyInUS = us(px.Duration)
			}
		}
		if n := len(proxies); n > 0 {
			r.ProxyUS = us(proxies[n-1].Duration) - r.ServerUS
		}
		if p != nil && p.Kind == "client" {
			r.ClientUS = us(p.Duration)
			r.WireUS = r.ClientUS - r.ServerUS
			if gp := byTrace[s.TraceID][p.ParentID]; gp != nil && gp.Component != "" {
				caller = gp.Component
			}
		}
		r.Depth = depth(byTrace[s.TraceID], s)
		r.Hop = caller + "→" + s.Component
		rows = append(rows, r)
	}
	return c, rows
}

// callTime is how much of server span s its calls (kids' client spans)
// covered: calls made in parallel overlap, and are counted once, so that
// the component's own time is what no call of it covered (synth's
// mode = "parallel"; subtracting each call whole left it below zero).
func callTime(s *deploy.Span, kids []*deploy.Span) time.Duration {
	type span struct{ from, to time.Time }
	var calls []span
	end := s.Start.Add(s.Duration)
	for _, k := range kids {
		if k.Kind != "client" || k.Proxy {
			continue
		}
		from, to := k.Start, k.Start.Add(k.Duration)
		// Clocks of one host; clipped to the server span all the same.
		if from.Before(s.Start) {
			from = s.Start
		}
		if to.After(end) {
			to = end
		}
		if to.After(from) {
			calls = append(calls, span{from, to})
		}
	}
	slices.SortFunc(calls, func(a, b span) int { return a.from.Compare(b.from) })
	var covered time.Duration
	var cur span
	for i, c := range calls {
		switch {
		case i == 0:
			cur = c
		case !c.from.After(cur.to):
			if c.to.After(cur.to) {
				cur.to = c.to
			}
		default:
			covered += cur.to.Sub(cur.from)
			cur = c
		}
	}
	if len(calls) > 0 {
		covered += cur.to.Sub(cur.from)
	}
	return covered
}

// depth counts the hosts' server spans above s.
func depth(trace map[string]*deploy.Span, s *deploy.Span) int32 {
	var d int32
	for p := trace[s.ParentID]; p != nil && d < 1000; p = trace[p.ParentID] {
		if p.Kind == "server" && !p.Proxy {
			d++
		}
	}
	return d
}

// appParent is the nearest ancestor of s a host made (nil at the root),
// and the proxies' spans between them, nearest first.
func appParent(trace map[string]*deploy.Span, s *deploy.Span) (*deploy.Span, []*deploy.Span) {
	var proxies []*deploy.Span
	p := trace[s.ParentID]
	for ; p != nil && p.Proxy && len(proxies) < 100; p = trace[p.ParentID] {
		proxies = append(proxies, p)
	}
	return p, proxies
}

// answered reports whether a host's server span is under s, directly or
// through proxies' spans: a client span, or a proxy's, that reaches no
// server lost the spans below it.
func answered(s *deploy.Span, children map[string][]*deploy.Span) bool {
	return answeredWithin(s, children, 100)
}

// answeredWithin is answered through at most n proxies' spans, so that
// spans whose parents loop end the walk.
func answeredWithin(s *deploy.Span, children map[string][]*deploy.Span, n int) bool {
	for _, k := range children[s.TraceID+"/"+s.SpanID] {
		if k.Kind == "server" && !k.Proxy || k.Proxy && n > 0 && answeredWithin(k, children, n-1) {
			return true
		}
	}
	return false
}

func spans0(spans []deploy.Span) (t0 time.Time) {
	for i, s := range spans {
		if i == 0 || s.Start.Before(t0) {
			t0 = s.Start
		}
	}
	return t0
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
