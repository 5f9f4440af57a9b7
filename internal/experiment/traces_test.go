package experiment

import (
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/warn"
)

// chainTrace is one request through a 3-hop chain: hop1 serves 1000 µs,
// calls hop2 (client 700 µs, server 600 µs), which calls hop3 (client 300
// µs, server 250 µs).
func chainTrace(id string, t0 time.Time) []deploy.Span {
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	return []deploy.Span{
		{TraceID: id, SpanID: "a", Kind: "server", Component: "hop1", Name: "m", Start: t0, Duration: us(1000)},
		{TraceID: id, SpanID: "b", ParentID: "a", Kind: "client", Peer: "hop2", Name: "m", Start: t0.Add(us(100)), Duration: us(700)},
		{TraceID: id, SpanID: "c", ParentID: "b", Kind: "server", Component: "hop2", Name: "m", Start: t0.Add(us(150)), Duration: us(600)},
		{TraceID: id, SpanID: "d", ParentID: "c", Kind: "client", Peer: "hop3", Name: "m", Start: t0.Add(us(200)), Duration: us(300)},
		{TraceID: id, SpanID: "e", ParentID: "d", Kind: "server", Component: "hop3", Name: "m", Start: t0.Add(us(225)), Duration: us(250)},
	}
}

func TestAnalyzeTraces(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	spans := append(chainTrace("t1", t0), chainTrace("t2", t0.Add(time.Second))...)
	c, rows := AnalyzeTraces(spans, 2, 1)
	if c.Traces != 2 || c.Spans != 10 || c.Roots != 2 || c.Orphans != 0 || c.Unanswered != 0 {
		t.Errorf("check %+v", c)
	}
	if p := c.Problems(); len(p) != 0 {
		t.Errorf("problems %v", p)
	}
	// Worked by hand from chainTrace.
	want := map[string]HopRow{
		"client→hop1": {Depth: 0, ServerUS: 1000, SelfUS: 300, ClientUS: 0, WireUS: 0},
		"hop1→hop2":   {Depth: 1, ServerUS: 600, SelfUS: 300, ClientUS: 700, WireUS: 100},
		"hop2→hop3":   {Depth: 2, ServerUS: 250, SelfUS: 250, ClientUS: 300, WireUS: 50},
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 3 hops × 2 traces", len(rows))
	}
	for _, r := range rows {
		w, ok := want[r.Hop]
		if !ok {
			t.Errorf("unexpected hop %q", r.Hop)
			continue
		}
		if r.Depth != w.Depth || r.ServerUS != w.ServerUS || r.SelfUS != w.SelfUS || r.ClientUS != w.ClientUS || r.WireUS != w.WireUS {
			t.Errorf("%s: %+v, want %+v", r.Hop, r, w)
		}
		if r.TraceID == "t2" && r.StartS < 1 {
			t.Errorf("%s of t2 starts at %v s", r.Hop, r.StartS)
		}
	}
}

func TestAnalyzeTracesDropped(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	full := chainTrace("t1", t0)
	tests := []struct {
		name  string
		spans []deploy.Span
		sent  int64
		check func(TraceCheck) bool
	}{
		{"server span of hop3 lost", full[:4], 1, func(c TraceCheck) bool { return c.Unanswered == 1 }},
		{"client span to hop2 lost", append(append([]deploy.Span{}, full[:1]...), full[2:]...), 1, func(c TraceCheck) bool { return c.Orphans == 1 }},
		{"a whole trace lost", full, 2, func(c TraceCheck) bool { return c.Traces == 1 }},
	}
	for _, tt := range tests {
		c, _ := AnalyzeTraces(tt.spans, tt.sent, 1)
		if !tt.check(c) || len(c.Problems()) == 0 {
			t.Errorf("%s: check %+v, problems %v", tt.name, c, c.Problems())
		}
		// Each is a spans_dropped warning, which its text alone (a
		// result of an svclab before kinds) also reads as.
		for _, p := range c.Problems() {
			if p.Kind != warn.SpansDropped || warn.Parse(p.Text) != p {
				t.Errorf("%s: problem %+v, read from its text %+v: want kind %s", tt.name, p, warn.Parse(p.Text), warn.SpansDropped)
			}
		}
	}
	// Below ratio 1 the count of traces is not known in advance.
	if c, _ := AnalyzeTraces(full, 2, 0.5); len(c.Problems()) != 0 {
		t.Errorf("ratio 0.5: problems %v", c.Problems())
	}
}

// proxiedTrace is chainTrace through Envoy sidecars that emit their own
// spans: the entry's proxy is the root, and each hop's client span holds
// the caller's proxy's span, which holds the callee's proxy's, which holds
// the server span.
func proxiedTrace(id string, t0 time.Time) []deploy.Span {
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	px := func(span, parent, kind string, start, d int) deploy.Span {
		return deploy.Span{TraceID: id, SpanID: span, ParentID: parent, Kind: kind, Proxy: true, Name: "ingress", Start: t0.Add(us(start)), Duration: us(d)}
	}
	app := chainTrace(id, t0.Add(us(50)))
	app[0].ParentID = "p1in"
	app[2].ParentID = "p2in"
	app[4].ParentID = "p3in"
	return append(app,
		px("p1in", "", "server", 0, 1100),
		px("p1out", "b", "client", 160, 650),
		px("p2in", "p1out", "server", 170, 620),
		px("p2out", "d", "client", 255, 290),
		px("p3in", "p2out", "server", 260, 270),
	)
}

func TestAnalyzeTracesProxies(t *testing.T) {
	spans := proxiedTrace("t1", time.Unix(1700000000, 0))
	c, rows := AnalyzeTraces(spans, 1, 1)
	if c.Traces != 1 || c.Spans != 10 || c.Roots != 1 || c.Orphans != 0 || c.Unanswered != 0 {
		t.Errorf("check %+v", c)
	}
	// Worked by hand from proxiedTrace: proxy_us is the outermost proxy
	// span less the server span.
	want := map[string]HopRow{
		"client→hop1": {Depth: 0, ServerUS: 1000, SelfUS: 300, ProxyInUS: 1100, ProxyUS: 100},
		"hop1→hop2":   {Depth: 1, ServerUS: 600, SelfUS: 300, ClientUS: 700, WireUS: 100, ProxyOutUS: 650, ProxyInUS: 620, ProxyUS: 50},
		"hop2→hop3":   {Depth: 2, ServerUS: 250, SelfUS: 250, ClientUS: 300, WireUS: 50, ProxyOutUS: 290, ProxyInUS: 270, ProxyUS: 40},
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3 hops (proxies' spans are no rows): %+v", len(rows), rows)
	}
	for _, r := range rows {
		w, ok := want[r.Hop]
		if !ok {
			t.Errorf("unexpected hop %q", r.Hop)
			continue
		}
		w.TraceID, w.Hop, w.Component, w.Method, w.StartS = r.TraceID, r.Hop, r.Component, r.Method, r.StartS
		if r != w {
			t.Errorf("%s:\n got %+v\nwant %+v", r.Hop, r, w)
		}
	}
	// A lost span shows, whichever side lost it.
	drop := func(id string) []deploy.Span {
		var out []deploy.Span
		for _, s := range spans {
			if s.SpanID != id {
				out = append(out, s)
			}
		}
		return out
	}
	for id, check := range map[string]func(TraceCheck) bool{
		"p3in":  func(c TraceCheck) bool { return c.Orphans == 1 && c.Unanswered == 2 }, // hop3's server span orphaned; d and p2out reach no server
		"e":     func(c TraceCheck) bool { return c.Unanswered == 3 },                   // d, p2out and p3in reach no server
		"p1out": func(c TraceCheck) bool { return c.Orphans == 1 && c.Unanswered == 1 },
	} {
		c, _ := AnalyzeTraces(drop(id), 1, 1)
		if !check(c) || len(c.Problems()) == 0 {
			t.Errorf("span %s dropped: check %+v, problems %v", id, c, c.Problems())
		}
	}
}

// TestHopStats: the live breakdown sums AnalyzeTraces's rows by hop, in
// depth order; each hop's own work and wire are its share of the
// requests' time at the entry (which add up to 1 when every span lies
// within its caller's: here the second hop3 outgrew its client span).
func TestHopStats(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	slow := chainTrace("t2", t0.Add(time.Second))
	slow[4].Duration *= 3 // hop3 serves 750 µs; the spans above it do not change
	_, rows := AnalyzeTraces(append(chainTrace("t1", t0), slow...), -1, 1)
	got := HopStats(rows)
	// Worked by hand from chainTrace: hop3 is 250 and 750 µs, and its wire
	// 50 µs then -450 µs (its client span did not grow), which counts as 0.
	want := []HopStat{
		{Hop: "client→hop1", Depth: 0, Calls: 2, ServerP50Ms: 1, ServerP99Ms: 1, SelfP50Ms: 0.3, SelfP99Ms: 0.3, Share: 0.3},
		{Hop: "hop1→hop2", Depth: 1, Calls: 2, ServerP50Ms: 0.6, ServerP99Ms: 0.6, SelfP50Ms: 0.3, SelfP99Ms: 0.3, WireP50Ms: 0.1, Share: 0.4},
		{Hop: "hop2→hop3", Depth: 2, Calls: 2, ServerP50Ms: 0.25, ServerP99Ms: 0.75, SelfP50Ms: 0.25, SelfP99Ms: 0.75, WireP50Ms: 0, Share: (250 + 50 + 750) / 2000.0},
	}
	if len(got) != len(want) {
		t.Fatalf("hops %+v, want %d", got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
		if g.Hop != w.Hop || g.Depth != w.Depth || g.Calls != w.Calls || !near(g.ServerP50Ms, w.ServerP50Ms) || !near(g.ServerP99Ms, w.ServerP99Ms) ||
			!near(g.SelfP50Ms, w.SelfP50Ms) || !near(g.SelfP99Ms, w.SelfP99Ms) || !near(g.WireP50Ms, w.WireP50Ms) || !near(g.Share, w.Share) {
			t.Errorf("hop %d: %+v\nwant %+v", i, g, w)
		}
	}
}

// TestAnalyzeTracesParallelCalls: a gateway serving 1000 µs calls a (100 to
// 500 µs) and b (300 to 700 µs) at once, then c (800 to 900 µs): its own
// time is what no call covered, 1000 - 600 - 100 = 300 µs, where
// subtracting each call whole said 100.
func TestAnalyzeTracesParallelCalls(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	spans := []deploy.Span{
		{TraceID: "t", SpanID: "g", Kind: "server", Component: "gateway", Name: "m", Start: t0, Duration: us(1000)},
		{TraceID: "t", SpanID: "ca", ParentID: "g", Kind: "client", Peer: "a", Name: "m", Start: t0.Add(us(100)), Duration: us(400)},
		{TraceID: "t", SpanID: "sa", ParentID: "ca", Kind: "server", Component: "a", Name: "m", Start: t0.Add(us(120)), Duration: us(350)},
		{TraceID: "t", SpanID: "cb", ParentID: "g", Kind: "client", Peer: "b", Name: "m", Start: t0.Add(us(300)), Duration: us(400)},
		{TraceID: "t", SpanID: "sb", ParentID: "cb", Kind: "server", Component: "b", Name: "m", Start: t0.Add(us(320)), Duration: us(350)},
		{TraceID: "t", SpanID: "cc", ParentID: "g", Kind: "client", Peer: "c", Name: "m", Start: t0.Add(us(800)), Duration: us(100)},
		{TraceID: "t", SpanID: "sc", ParentID: "cc", Kind: "server", Component: "c", Name: "m", Start: t0.Add(us(810)), Duration: us(80)},
	}
	_, rows := AnalyzeTraces(spans, 1, 1)
	want := map[string]float64{"client→gateway": 300, "gateway→a": 350, "gateway→b": 350, "gateway→c": 80}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if w, ok := want[r.Hop]; !ok || r.SelfUS != w {
			t.Errorf("%s: self_us %v, want %v", r.Hop, r.SelfUS, w)
		}
	}
}
