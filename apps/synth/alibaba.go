package synth

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	synthpb "github.com/svclab/svclab/proto/synth"
)

// ImportOptions say what an import of call-graph traces writes.
type ImportOptions struct {
	// Entry is the service whose traces are imported; empty means the
	// entry of the most traces.
	Entry string
	// CPUShare is the part of a service's own time written as cpu, the
	// rest as sleep: the traces give wall time only.
	CPUShare float64
	// Response is every service's response size: the traces give none.
	Response Size
	// Paths, when above zero, writes the call trees of that many of the
	// most frequent shapes as app.paths, for requests that follow a
	// trace's tree exactly.
	Paths int
}

// ImportReport says what an import read, kept and dropped, and why.
type ImportReport struct {
	Rows, BadRows int
	// Dropped counts the rows left out, by reason.
	Dropped map[string]int
	// BadRowErrors are the first of the rows that did not parse, with
	// their line and column.
	BadRowErrors []string
	// Traces of the entry that were imported, and TracesOther those of
	// other entries, left out.
	Traces, TracesOther int
	Entry               string
	// Unattributed is, over the imported calls, the share of the
	// services' response time that their own work could not account
	// for: their callees' times added up to more than their own (calls
	// in parallel), and the clamp to zero dropped the difference.
	Unattributed float64
	// Names maps each service name written to the trace's name, where
	// they differ.
	Names map[string]string
	// Shapes is how many distinct call trees the imported traces have,
	// and PathTraces how many traces the written paths' shapes cover.
	Shapes, PathTraces int
}

// Reasons a row is left out of an import.
const (
	DropDuplicate    = "duplicate row"
	DropConflicting  = "rows of one rpc id disagree on caller or callee"
	DropOrphan       = "parent call missing from the trace (rpc id breaks the call tree)"
	DropWrongCaller  = "caller is not the callee of its parent call"
	DropNoRoot       = "trace without its root call"
	DropUnderDropped = "under a call that was dropped"
	DropOtherEntry   = "trace of another entry service"
	DropSeveralRoot  = "trace with several root services"
)

// clientNames are the callers Alibaba's traces write for a request from
// outside, whose callee is then the trace's entry.
var clientNames = map[string]bool{"USER": true, "UNKNOWN": true, "UNAVAILABLE": true, "": true, "?": true}

// traceRow is the part of a row an import uses.
type traceRow struct {
	trace, rpcid, um, dm string
	rt                   float64
	line                 int
}

// columns each schema names; 2021's and 2022's differ in rpcid's name
// and in columns the import does not need.
var columnNames = map[string][]string{
	"traceid": {"traceid"},
	"rpcid":   {"rpcid", "rpc_id"},
	"um":      {"um"},
	"dm":      {"dm"},
	"rt":      {"rt"},
}

var rpcidRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)

// ImportAlibaba reads a microservice call-graph trace in the schema of
// Alibaba's cluster-trace-microservices-v2021 or -v2022 (a CSV with a
// header naming traceid, rpcid or rpc_id, um, dm and rt; other columns are
// ignored, lines starting with # are comments) and returns a synth config
// of one entry service's traces: the services and edges seen, each edge's
// probability (the share of its caller's calls that made it) and count
// (its calls when made), and each service's own time, its response time
// less its callees', clamped at zero.
func ImportAlibaba(r io.Reader, opts ImportOptions) (*Config, *ImportReport, error) {
	rows, rep, err := readRows(r)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, rep, fmt.Errorf("no row of calls that parses: %d rows after the header", rep.Rows)
	}
	traces := map[string][]traceRow{}
	var order []string
	for _, row := range rows {
		if _, ok := traces[row.trace]; !ok {
			order = append(order, row.trace)
		}
		traces[row.trace] = append(traces[row.trace], row)
	}
	var trees []*callTree
	entries := map[string]int{}
	for _, id := range order {
		t := buildTree(traces[id], rep)
		if t != nil {
			trees = append(trees, t)
			entries[t.entry]++
		}
	}
	rep.Entry = opts.Entry
	if rep.Entry == "" {
		// The entry of the most traces, the first by name on a tie.
		for _, e := range slices.Sorted(maps.Keys(entries)) {
			if entries[e] > entries[rep.Entry] {
				rep.Entry = e
			}
		}
	}
	if len(trees) == 0 {
		return nil, rep, errors.New("no complete trace: every trace lacks its root call or breaks its call tree")
	}
	agg := newAggregate()
	for _, t := range trees {
		if t.entry != rep.Entry {
			rep.TracesOther++
			rep.Dropped[DropOtherEntry] += t.rows
			continue
		}
		rep.Traces++
		agg.add(t)
	}
	if rep.Traces == 0 {
		return nil, rep, fmt.Errorf("--entry %s: no complete trace has that entry (entries: %s)", rep.Entry, strings.Join(slices.Sorted(maps.Keys(entries)), ", "))
	}
	c := agg.config(opts, rep)
	if err := c.Validate(); err != nil {
		return nil, rep, fmt.Errorf("the imported services: %w", err)
	}
	return c, rep, nil
}

// readRows reads the rows, counting and keeping aside those that do not
// parse.
func readRows(r io.Reader) ([]traceRow, *ImportReport, error) {
	rep := &ImportReport{Dropped: map[string]int{}, Names: map[string]string{}}
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, errors.New("no header line: the file is empty, or only comments")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("header line: %w", err)
	}
	col := map[string]int{}
	for name, aliases := range columnNames {
		for i, h := range header {
			if slices.Contains(aliases, strings.ToLower(strings.TrimSpace(h))) {
				col[name] = i
			}
		}
		if _, ok := col[name]; !ok {
			return nil, nil, fmt.Errorf("header %q lacks column %s (the 2021 and 2022 call-graph schemas have it)", strings.Join(header, ","), strings.Join(aliases, " or "))
		}
	}
	width := len(header)
	// field names a row's field as a person finds it: the header's name
	// and its place among the fields, and where the line has it.
	header = slices.Clone(header) // ReuseRecord: the next Read overwrites it
	field := func(name string) string {
		i := col[name]
		_, c := cr.FieldPos(i)
		return fmt.Sprintf("field %d %q (character %d)", i+1, header[i], c)
	}
	var rows []traceRow
	bad := func(format string, args ...any) {
		rep.BadRows++
		if len(rep.BadRowErrors) < 10 {
			rep.BadRowErrors = append(rep.BadRowErrors, fmt.Sprintf(format, args...))
		}
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		rep.Rows++
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			bad("line %d, character %d: %v", pe.Line, pe.Column, pe.Err)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if len(rec) != width {
			bad("line %d: %d fields, the header has %d", line, len(rec), width)
			continue
		}
		row := traceRow{trace: rec[col["traceid"]], rpcid: rec[col["rpcid"]], um: rec[col["um"]], dm: rec[col["dm"]], line: line}
		if !rpcidRE.MatchString(row.rpcid) {
			bad("line %d, %s: %q is not a call path such as 0.1.2", line, field("rpcid"), row.rpcid)
			continue
		}
		rt, err := strconv.ParseFloat(strings.TrimSpace(rec[col["rt"]]), 64)
		if err != nil || math.IsNaN(rt) || math.IsInf(rt, 0) {
			bad("line %d, %s: %q is not a number of milliseconds", line, field("rt"), rec[col["rt"]])
			continue
		}
		row.rt = rt
		rows = append(rows, row)
	}
	return rows, rep, nil
}

// call is one call of a trace: caller, callee, the caller's response
// time (the callee's when the caller's row is missing), and its calls.
type call struct {
	rpcid, um, dm string
	rt            float64
	known         bool // rt was recorded
	children      []*call
}

type callTree struct {
	entry string
	// root is the client's call of the entry, or one made up for it
	// (rt unknown) when the trace did not record it.
	root *call
	top  []*call
	rows int
}

// buildTree checks one trace's rows and makes its call tree, counting
// what it drops in rep; nil when nothing of the trace is usable.
func buildTree(rows []traceRow, rep *ImportReport) *callTree {
	byID := map[string][]traceRow{}
	for _, r := range rows {
		byID[r.rpcid] = append(byID[r.rpcid], r)
	}
	dropped := map[string]int{}
	calls := map[string]*call{}
	for id, rs := range byID {
		// Exact repeats are duplicates; a remote call is recorded twice,
		// by its caller (rt ≥ 0) and its callee (rt ≤ 0), which is not.
		seen := map[traceRow]bool{}
		var kept []traceRow
		for _, r := range rs {
			k := r
			k.line = 0
			if seen[k] {
				rep.Dropped[DropDuplicate]++
				continue
			}
			seen[k] = true
			kept = append(kept, r)
		}
		byID[id] = kept
		c := &call{rpcid: id, um: kept[0].um, dm: kept[0].dm}
		agree := len(kept) <= 2
		for _, r := range kept {
			agree = agree && r.um == c.um && r.dm == c.dm
		}
		if !agree {
			dropped[DropConflicting] += len(kept)
			continue
		}
		// The caller's time includes the network; the callee's (negated)
		// is the fallback when the caller's row is missing.
		var callee float64
		for _, r := range kept {
			if r.rt >= 0 {
				c.rt, c.known = r.rt, true
			} else {
				callee = -r.rt
			}
		}
		if !c.known && callee > 0 {
			c.rt, c.known = callee, true
		}
		calls[id] = c
	}
	// Parents before children: by depth, then by id.
	ids := slices.SortedFunc(maps.Keys(calls), compareRPCIDs)
	t := &callTree{}
	kept := map[string]*call{}
	for _, id := range ids {
		c := calls[id]
		parentID, _, hasParent := cutLast(id)
		if !hasParent || (parentID == "0" && calls["0"] == nil) {
			t.top = append(t.top, c)
			kept[id] = c
			continue
		}
		parent, ok := kept[parentID]
		switch {
		case !ok && calls[parentID] != nil:
			dropped[DropUnderDropped] += len(byID[id])
		case !ok:
			dropped[DropOrphan] += len(byID[id])
		case parent.dm != c.um:
			dropped[DropWrongCaller] += len(byID[id])
		default:
			parent.children = append(parent.children, c)
			kept[id] = c
		}
	}
	for id := range kept {
		t.rows += len(byID[id])
	}
	add := func(m map[string]int) {
		for k, v := range m {
			rep.Dropped[k] += v
		}
	}
	roots := map[string]bool{}
	for _, c := range t.top {
		roots[c.um] = true
	}
	switch {
	case len(t.top) == 0:
		// Every call hangs under one that is missing: the trace lost
		// its first rows.
		rep.Dropped[DropNoRoot] += dropped[DropOrphan] + dropped[DropUnderDropped]
		delete(dropped, DropOrphan)
		delete(dropped, DropUnderDropped)
		add(dropped)
		return nil
	case len(roots) > 1 || (len(t.top) > 1 && clientNames[t.top[0].um]):
		rep.Dropped[DropSeveralRoot] += t.rows
		add(dropped)
		return nil
	case clientNames[t.top[0].um]:
		t.root = t.top[0]
	default:
		// The client's call of the entry was not recorded: the entry's
		// own time is unknown, its calls are not.
		t.root = &call{dm: t.top[0].um, children: t.top}
	}
	t.entry = t.root.dm
	add(dropped)
	return t
}

// cutLast splits "0.1.2" into "0.1" and "2".
func cutLast(id string) (string, string, bool) {
	i := strings.LastIndexByte(id, '.')
	if i < 0 {
		return "", id, false
	}
	return id[:i], id[i+1:], true
}

// aggregate sums the imported traces per service and edge.
type aggregate struct {
	calls map[string]int // invocations of each service
	// edges[from][to]: calls in all, and invocations of from that made
	// at least one.
	edgeCalls, edgeTaken map[string]map[string]int
	edgeOrder            map[string][]string
	// own and total time of each service, over its invocations with a
	// known time; clamped sums the differences the clamp dropped.
	own, total, clamped map[string]float64
	invocations         map[string]int // with children
	parallel            map[string]int // invocations whose callees outlasted them
	order               []string
	// shapes counts the traces of each call tree, by its text with the
	// traces' names; trees keeps one tree of each.
	shapes map[string]int
	trees  map[string]*call
}

func newAggregate() *aggregate {
	return &aggregate{
		calls: map[string]int{}, edgeCalls: map[string]map[string]int{}, edgeTaken: map[string]map[string]int{},
		edgeOrder: map[string][]string{}, own: map[string]float64{}, total: map[string]float64{},
		clamped: map[string]float64{}, invocations: map[string]int{}, parallel: map[string]int{},
		shapes: map[string]int{}, trees: map[string]*call{},
	}
}

func (a *aggregate) add(t *callTree) {
	a.visit(t.root)
	key := formatPath(planOf(t.root, nil))
	a.shapes[key]++
	if a.trees[key] == nil {
		a.trees[key] = t.root
	}
}

// planOf is the calls under c as a plan, services renamed by names (kept
// as they are where names is nil).
func planOf(c *call, names map[string]string) *synthpb.Plan {
	plan := &synthpb.Plan{}
	for _, ch := range c.children {
		to := ch.dm
		if names != nil {
			to = names[to]
		}
		step := &synthpb.Step{To: to}
		if len(ch.children) > 0 {
			step.Plan = planOf(ch, names)
		}
		plan.Calls = append(plan.Calls, step)
	}
	return plan
}

func (a *aggregate) visit(c *call) {
	s := c.dm
	if _, ok := a.calls[s]; !ok {
		a.order = append(a.order, s)
	}
	a.calls[s]++
	if a.edgeCalls[s] == nil {
		a.edgeCalls[s], a.edgeTaken[s] = map[string]int{}, map[string]int{}
	}
	taken := map[string]bool{}
	var sum float64
	for _, ch := range c.children {
		if _, ok := a.edgeCalls[s][ch.dm]; !ok {
			a.edgeOrder[s] = append(a.edgeOrder[s], ch.dm)
		}
		a.edgeCalls[s][ch.dm]++
		if !taken[ch.dm] {
			taken[ch.dm] = true
			a.edgeTaken[s][ch.dm]++
		}
		sum += ch.rt
		a.visit(ch)
	}
	if c.known {
		own := c.rt - sum
		a.total[s] += c.rt
		if own < 0 {
			a.clamped[s] += -own
			own = 0
		}
		a.own[s] += own
	}
	if len(c.children) > 0 {
		a.invocations[s]++
		if sum > c.rt {
			a.parallel[s]++
		}
	}
}

// config writes the aggregate as a synth config.
func (a *aggregate) config(opts ImportOptions, rep *ImportReport) *Config {
	names := map[string]string{}
	used := map[string]bool{}
	for _, s := range a.order {
		n := safeName(s)
		for i := 2; used[n]; i++ {
			n = fmt.Sprintf("%s_%d", safeName(s), i)
		}
		used[n] = true
		names[s] = n
		if n != s {
			rep.Names[n] = s
		}
	}
	c := &Config{EntryName: names[rep.Entry], Services: map[string]*Service{}}
	var total, clamped float64
	for _, s := range a.order {
		n := a.calls[s]
		own := time.Duration(a.own[s] / float64(n) * float64(time.Millisecond)).Round(time.Microsecond)
		cpu := time.Duration(float64(own) * opts.CPUShare).Round(time.Microsecond)
		svc := &Service{
			Work:     Work{CPU: Duration{dist{a: float64(cpu)}}, Sleep: Duration{dist{a: float64(own - cpu)}}},
			Response: opts.Response,
		}
		// Callees that outlast their caller more often than not were
		// called at once.
		if a.invocations[s] > 0 && 2*a.parallel[s] > a.invocations[s] {
			svc.Mode = Parallel
		}
		for _, to := range a.edgeOrder[s] {
			taken := a.edgeTaken[s][to]
			// Four decimals keep the spec readable and the expected calls
			// within a ten-thousandth of the traces'.
			count := math.Round(float64(a.edgeCalls[s][to])/float64(taken)*1e4) / 1e4
			p := math.Round(float64(taken)/float64(n)*1e4) / 1e4
			call := Call{To: names[to]}
			if count != 1 {
				call.Count = &count
			}
			if p != 1 {
				call.Probability = &p
			}
			svc.Calls = append(svc.Calls, call)
		}
		c.Services[names[s]] = svc
		total += a.total[s]
		clamped += a.clamped[s]
	}
	if total > 0 {
		rep.Unattributed = clamped / total
	}
	rep.Shapes = len(a.shapes)
	keys := slices.SortedFunc(maps.Keys(a.shapes), func(x, y string) int {
		return cmp.Or(cmp.Compare(a.shapes[y], a.shapes[x]), strings.Compare(x, y))
	})
	for _, k := range keys[:min(opts.Paths, len(keys))] {
		c.Paths = append(c.Paths, formatPath(planOf(a.trees[k], names)))
		rep.PathTraces += a.shapes[k]
	}
	return c
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// safeName makes a trace's service name a synth service name: 2021's
// names are 64 hex digits, which may start with a digit and are too long.
func safeName(s string) string {
	n := unsafeName.ReplaceAllString(s, "_")
	if n == "" || !(n[0] >= 'A' && n[0] <= 'Z' || n[0] >= 'a' && n[0] <= 'z') {
		n = "ms_" + n
	}
	if len(n) > 24 && !serviceName.MatchString(n) || len(n) > 63 {
		n = n[:24]
	}
	return n
}

// Lines says what the import did, a line each: what it read, what it kept,
// what it dropped and why, and how much time it could not attribute.
func (r *ImportReport) Lines() []string {
	kept := r.Rows - r.BadRows
	for _, n := range r.Dropped {
		kept -= n
	}
	out := []string{
		fmt.Sprintf("%d rows read: %d kept, %d that do not parse, %d dropped", r.Rows, kept, r.BadRows, r.Rows-r.BadRows-kept),
	}
	if r.Entry != "" {
		out = append(out, fmt.Sprintf("entry %s: %d traces imported, %d of other entries left out", r.Entry, r.Traces, r.TracesOther))
	}
	for _, reason := range slices.Sorted(maps.Keys(r.Dropped)) {
		if r.Dropped[reason] > 0 {
			out = append(out, fmt.Sprintf("dropped %s: %s", rowsText(r.Dropped[reason]), reason))
		}
	}
	for _, e := range r.BadRowErrors {
		out = append(out, "does not parse: "+e)
	}
	if n := r.BadRows - len(r.BadRowErrors); n > 0 {
		out = append(out, fmt.Sprintf("and %s more that do not parse", rowsText(n)))
	}
	switch {
	case r.Traces == 0:
		// Nothing imported: no time to attribute.
	case r.Unattributed > 0:
		out = append(out, fmt.Sprintf("%.1f%% of the services' response time is not attributed: their callees took longer than they did (calls in parallel, or clocks apart), and own time is clamped at zero", 100*r.Unattributed))
	default:
		out = append(out, "all of the services' response time is attributed: no callee took longer than its caller")
	}
	if r.PathTraces > 0 {
		out = append(out, fmt.Sprintf("app.paths: the most frequent call trees, covering %d of the %d traces (%d distinct trees)", r.PathTraces, r.Traces, r.Shapes))
	}
	for _, n := range slices.Sorted(maps.Keys(r.Names)) {
		out = append(out, fmt.Sprintf("service %s is %s in the trace", n, r.Names[n]))
	}
	return out
}

func rowsText(n int) string {
	if n == 1 {
		return "1 row"
	}
	return strconv.Itoa(n) + " rows"
}

// compareRPCIDs orders rpc ids by depth, then siblings by number (0.1.2
// before 0.1.10), the order the calls were made in.
func compareRPCIDs(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	if c := cmp.Compare(len(pa), len(pb)); c != 0 {
		return c
	}
	for i := range pa {
		na, _ := strconv.Atoi(pa[i])
		nb, _ := strconv.Atoi(pb[i])
		if c := cmp.Compare(na, nb); c != 0 {
			return c
		}
	}
	return 0
}
