package synth_test

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/svclab/svclab/apps/synth"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/runtime/transport/inproc"
	synthpb "github.com/svclab/svclab/proto/synth"
)

const sample = "testdata/alibaba-2022-sample.csv"

func importSample(t *testing.T) (*synth.Config, *synth.ImportReport) {
	t.Helper()
	f, err := os.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var resp synth.Size
	if err := resp.UnmarshalText([]byte("1KiB")); err != nil {
		t.Fatal(err)
	}
	c, rep, err := synth.ImportAlibaba(f, synth.ImportOptions{CPUShare: 0.5, Response: resp})
	if err != nil {
		t.Fatal(err)
	}
	return c, rep
}

// TestImportCleans: the sample's faults are each dropped, counted under
// their reason, and the rows that do not parse are named by line and
// column.
func TestImportCleans(t *testing.T) {
	_, rep := importSample(t)
	if rep.Entry != "MS_10" || rep.Traces != 149 || rep.TracesOther != 20 {
		t.Errorf("entry %s, %d traces, %d of others; want MS_10, 149 (T_1010 lacks its root), 20", rep.Entry, rep.Traces, rep.TracesOther)
	}
	for reason, want := range map[string]int{
		synth.DropDuplicate:   1,
		synth.DropOrphan:      1,
		synth.DropWrongCaller: 1,
		synth.DropOtherEntry:  40,
	} {
		if got := rep.Dropped[reason]; got != want {
			t.Errorf("%s: %d rows dropped, want %d (all: %v)", reason, got, want, rep.Dropped)
		}
	}
	if rep.Dropped[synth.DropNoRoot] < 2 {
		t.Errorf("T_1010's rows not dropped as rootless: %v", rep.Dropped)
	}
	if rep.BadRows != 3 {
		t.Errorf("%d bad rows, want 3: %v", rep.BadRows, rep.BadRowErrors)
	}
	// The sample's last lines are the bad ones: a field by its place and
	// the header's name, then where it starts on the line (bytes from 1).
	for _, want := range []string{
		`^line 2220, field 11 "rt" \(character 72\): "fast" is not a number`,
		`^line 2221: 5 fields, the header has 11`,
		`^line 2222, field 4 "rpc_id" \(character 18\): "0.x.1" is not a call path`,
	} {
		if !slices.ContainsFunc(rep.BadRowErrors, regexp.MustCompile(want).MatchString) {
			t.Errorf("bad rows lack %s: %q", want, rep.BadRowErrors)
		}
	}
}

// sampleEdges counts, independently of the importer, the calls per edge
// in the sample's complete traces of MS_10: one call per rpc id (a remote
// call's two rows are one call), in traces that have their root call,
// leaving out calls whose parent is missing or made by another service.
func sampleEdges(t *testing.T) (map[string][]float64, int) {
	f, err := os.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ trace, rpcid string }
	callee := map[key]string{}
	caller := map[key]string{}
	traces := map[string]bool{}
	for _, rec := range recs[1:] {
		if len(rec) != 11 {
			continue
		}
		if _, err := strconv.ParseFloat(rec[10], 64); err != nil {
			continue
		}
		k := key{rec[1], rec[3]}
		callee[k], caller[k] = rec[8], rec[4]
		if rec[3] == "0.1" && rec[8] == "MS_10" {
			traces[rec[1]] = true
		}
	}
	var ids []string
	for tr := range traces {
		ids = append(ids, tr)
	}
	perTrace := map[string][]float64{}
	for i, tr := range ids {
		for k, dm := range callee {
			parent := k.rpcid[:max(strings.LastIndexByte(k.rpcid, '.'), 0)]
			if k.trace != tr || k.rpcid == "0.1" || callee[key{tr, parent}] != caller[k] {
				continue
			}
			e := caller[k] + ">" + dm
			if perTrace[e] == nil {
				perTrace[e] = make([]float64, len(ids))
			}
			perTrace[e][i]++
		}
	}
	return perTrace, len(ids)
}

// counting counts the calls made through it.
type counting struct {
	cc grpc.ClientConnInterface
	n  *atomic.Int64
}

func (c counting) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	c.n.Add(1)
	return c.cc.Invoke(ctx, method, args, reply, opts...)
}

func (c counting) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.cc.NewStream(ctx, desc, method, opts...)
}

// inprocApp builds a config's services in this process, each on its own
// in-process channel, and returns a client of the entry and a counter of
// the calls on each edge ("from>to").
func inprocApp(t *testing.T, c *synth.Config) (synthpb.ServiceClient, map[string]*atomic.Int64) {
	t.Helper()
	channels := map[string]*inproc.Channel{}
	counts := map[string]*atomic.Int64{}
	comps := c.Components()
	for _, comp := range comps {
		channels[comp.Name] = inproc.New(transport.ServerOptions{}, transport.DialOptions{})
	}
	for _, comp := range comps {
		deps := runtime.Deps{}
		for _, d := range comp.Deps {
			n := &atomic.Int64{}
			counts[comp.Name+">"+d] = n
			deps[d] = counting{cc: channels[d], n: n}
		}
		impl, err := comp.New(context.Background(), deps)
		if err != nil {
			t.Fatal(err)
		}
		channels[comp.Name].RegisterService(comp.Service, impl)
	}
	return synthpb.NewServiceClient(channels[c.Entry()]), counts
}

// TestImportReplay: the imported spec, replayed for 1,000 requests of its
// entry, makes on each edge the calls the sample's traces made per trace,
// within sampling error.
func TestImportReplay(t *testing.T) {
	c, rep := importSample(t)
	// Only the calls are under test: the replay need not wait.
	for _, s := range c.ServicesInForce() {
		s.Work = synth.Work{}
	}
	entry, counts := inprocApp(t, c)
	ctx := context.Background()
	const requests = 1000
	for range requests {
		if _, err := entry.Call(ctx, &synthpb.CallRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	want, traces := sampleEdges(t)
	if traces != rep.Traces {
		t.Errorf("the sample has %d complete traces of MS_10, the import used %d", traces, rep.Traces)
	}
	if len(want) != len(counts) {
		t.Errorf("%d edges in the sample, %d in the spec", len(want), len(counts))
	}
	for e, per := range want {
		n, ok := counts[e]
		if !ok {
			t.Errorf("edge %s of the sample is not in the spec", e)
			continue
		}
		var mean, sq float64
		for _, x := range per {
			mean += x
		}
		mean /= float64(len(per))
		for _, x := range per {
			sq += (x - mean) * (x - mean)
		}
		sd := math.Sqrt(sq / float64(len(per)-1))
		got := float64(n.Load()) / requests
		// Four standard errors of a mean of 1,000 requests.
		tol := 4*sd/math.Sqrt(requests) + 1e-9
		t.Logf("%s: %.3f calls a request replayed, %.3f a trace in the sample (±%.3f)", e, got, mean, tol)
		if math.Abs(got-mean) > tol {
			t.Errorf("%s: %.3f calls a request, the sample's %.3f ± %.3f", e, got, mean, tol)
		}
	}
}

// TestImportPaths: --paths writes the most frequent call trees, and a
// request following one makes exactly its calls.
func TestImportPaths(t *testing.T) {
	f, err := os.Open(sample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, rep, err := synth.ImportAlibaba(f, synth.ImportOptions{Paths: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Paths) != 3 || rep.PathTraces < 3 || rep.Shapes < 3 {
		t.Fatalf("paths %q, covering %d traces of %d shapes", c.Paths, rep.PathTraces, rep.Shapes)
	}
	reqs := c.Requests()
	if len(reqs) != 3 || reqs[0].Name != "path1" {
		t.Fatalf("requests %v", reqs)
	}
	for _, s := range c.ServicesInForce() {
		s.Work = synth.Work{}
	}
	for i, path := range c.Paths {
		entry, counts := inprocApp(t, c)
		for range 10 {
			if _, err := reqs[i].Invoke(context.Background(), entryConn{entry}); err != nil {
				t.Fatal(err)
			}
		}
		want := edgesOfPath(c.Entry(), path)
		for e, n := range counts {
			if got := n.Load(); got != 10*int64(want[e]) {
				t.Errorf("path %q: %s called %d times in 10 requests, want %d", path, e, got, 10*want[e])
			}
		}
	}
}

// entryConn invokes through a generated client, for Request.Invoke.
type entryConn struct{ c synthpb.ServiceClient }

func (e entryConn) Invoke(ctx context.Context, _ string, args, reply any, _ ...grpc.CallOption) error {
	resp, err := e.c.Call(ctx, args.(*synthpb.CallRequest))
	if err != nil {
		return err
	}
	proto.Merge(reply.(*synthpb.CallResponse), resp)
	return nil
}

func (e entryConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, nil
}

// edgesOfPath counts the calls per edge of a path as written, read
// character by character: a name calls what its parentheses hold.
func edgesOfPath(entry, path string) map[string]int {
	out := map[string]int{}
	stack := []string{entry}
	name, last := "", ""
	flush := func() {
		if name != "" {
			out[stack[len(stack)-1]+">"+name]++
			last, name = name, ""
		}
	}
	for _, r := range path {
		switch r {
		case ' ':
			flush()
		case '(':
			flush()
			stack = append(stack, last)
		case ')':
			flush()
			stack = stack[:len(stack)-1]
		default:
			name += string(r)
		}
	}
	flush()
	return out
}

// TestImportBadHeader: a file with no header, or a header without a column
// the schemas have, is refused saying which.
func TestImportBadHeader(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"empty", "", "no header line: the file is empty, or only comments"},
		{"only comments", "# a note\n# another\n", "no header line"},
		{"no rt", "traceid,rpc_id,um,dm\nT,0.1,a,b\n", `lacks column rt`},
		{"unterminated quote", "traceid,\"rpc_id,um,dm,rt\n", "header line: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := synth.ImportAlibaba(strings.NewReader(tc.src), synth.ImportOptions{CPUShare: 0.5})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ImportAlibaba: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
