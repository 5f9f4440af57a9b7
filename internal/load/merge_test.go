package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/warn"
)

func intp(v int) *int { return &v }

func TestShare(t *testing.T) {
	base := Config{Mode: Closed, Users: 7, SpawnRate: 7, Requests: 10, Connections: 5, Seed: 42,
		Stages: []Stage{{Type: "ramp", Duration: Duration(time.Second), Users: 4}}, Generators: intp(3)}
	want := []struct {
		users, stageUsers, conns int
		requests                 int64
		spawn                    float64
	}{{3, 2, 2, 4, 3}, {2, 1, 2, 3, 2}, {2, 1, 1, 3, 2}}
	seeds := map[int64]bool{}
	for i, w := range want {
		got := base.Share(Shard{i, 3})
		if got.Users != w.users || got.Stages[0].Users != w.stageUsers || got.Connections != w.conns ||
			got.Requests != w.requests || got.SpawnRate != w.spawn || got.Generators != nil {
			t.Errorf("share %d/3 = users %d, stage users %d, connections %d, requests %d, spawn_rate %v, generators %v; want %+v",
				i, got.Users, got.Stages[0].Users, got.Connections, got.Requests, got.SpawnRate, got.Generators, w)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("share %d/3 does not validate: %v", i, err)
		}
		seeds[got.Seed] = true
	}
	if len(seeds) != 3 || !seeds[42] {
		t.Errorf("seeds of the shares: want 42 for the first and three distinct, got %v", seeds)
	}
	if base.Stages[0].Users != 4 {
		t.Errorf("Share changed the caller's stages: %+v", base.Stages)
	}
	open := Config{Rate: 300, WarmupRate: 60, Warmup: Duration(time.Second), Stages: []Stage{{Type: "step", Duration: Duration(time.Second), Rate: 90}}}
	got := open.Share(Shard{2, 3})
	if got.Rate != 100 || got.Stages[0].Rate != 30 || got.WarmupRate != 20 {
		t.Errorf("open share: rate %v, stage rate %v, warm-up rate %v; want 100, 30 and 20", got.Rate, got.Stages[0].Rate, got.WarmupRate)
	}
}

func TestGeneratorsValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Rate: 10, Generators: intp(0)}, fmt.Sprintf("load.generators: must be between 1 and %d generator processes, got 0", MaxGenerators)},
		{Config{Rate: 10, Generators: intp(-2)}, fmt.Sprintf("load.generators: must be between 1 and %d generator processes, got -2", MaxGenerators)},
		{Config{Rate: 10, Generators: intp(MaxGenerators + 1)}, fmt.Sprintf("load.generators: must be between 1 and %d generator processes, got %d", MaxGenerators, MaxGenerators+1)},
		{Config{Mode: Closed, Users: 2, Generators: intp(3)}, "load.generators: 2 closed-loop users cannot be split over 3 generators: give at least one user each"},
		{Config{Rate: 10, Requests: 2, Generators: intp(3)}, "load.generators: a limit of 2 requests cannot be split over 3 generators: give at least one each"},
		{Config{Rate: 10, Generators: intp(3)}, ""},
	} {
		err := c.cfg.Validate()
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	for in, ok := range map[string]bool{"0/1": true, "2/3": true, "3/3": false, "-1/2": false, "1": false, "a/b": false, "0/0": false, fmt.Sprintf("0/%d", MaxGenerators+1): false} {
		if _, err := ParseShard(in); (err == nil) != ok {
			t.Errorf("ParseShard(%q) error %v, want ok=%v", in, err, ok)
		}
	}
}

// jitterServer answers after a random 0-2 ms, so that the latencies of
// different generators' requests spread over many histogram buckets.
func jitterServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(rand.Int64N(int64(2 * time.Millisecond))))
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// runShards runs n generators of cfg in this process, started together,
// each writing its directory as svclab load --shard I/N --dir does.
func runShards(t *testing.T, cfg Config, n int) []string {
	t.Helper()
	dirs := make([]string, n)
	errs := make([]error, n)
	start := time.Now().Add(200 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i] = t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh := Shard{i, n}
			c := cfg.Share(sh)
			tg, err := NewTarget(c)
			if err != nil {
				errs[i] = err
				return
			}
			defer tg.Close()
			res, err := Run(context.Background(), c, tg, Options{Dir: dirs[i], Shard: sh, StartAt: start})
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Close()
			errs[i] = res.WriteShard(dirs[i], sh)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("generator %d: %v", i, err)
		}
	}
	return dirs
}

func readSamples(t *testing.T, path string) []sampleRow {
	t.Helper()
	rows, err := parquet.ReadFile[sampleRow](path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestMergeEqualsPooled: the merged percentiles are those of every
// generator's raw samples pooled, computed independently of the merge:
// once with an HdrHistogram of the generator's precision (which must
// agree exactly) and once as exact order statistics of the sorted
// samples (which must agree within the histogram's 3 significant digits).
func TestMergeEqualsPooled(t *testing.T) {
	srv := jitterServer(t)
	cfg := Config{Target: srv.URL, Rate: 600, Arrival: Poisson, Seed: 7, Duration: Duration(2 * time.Second),
		RawSamples: true, Generators: intp(3)}
	dirs := runShards(t, cfg, 3)
	res, err := Merge(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	out := t.TempDir()
	if err := res.WriteDir(out); err != nil {
		t.Fatal(err)
	}
	var pooled []sampleRow
	for _, d := range dirs {
		pooled = append(pooled, readSamples(t, filepath.Join(d, "samples.parquet"))...)
	}
	merged := readSamples(t, filepath.Join(out, "samples.parquet"))
	if len(merged) != len(pooled) {
		t.Fatalf("merged samples.parquet has %d rows, the generators %d", len(merged), len(pooled))
	}
	tot := mustOp(t, res, "total")
	if tot.Count != int64(len(pooled)) {
		t.Fatalf("merged count %d, pooled samples %d", tot.Count, len(pooled))
	}
	h := newHist()
	lat := make([]float64, 0, len(pooled))
	for _, s := range pooled {
		h.RecordValue(min(max(int64(math.Floor(s.LatencyUs)), histMinUs), histMaxUs))
		lat = append(lat, s.LatencyUs)
	}
	slices.Sort(lat)
	want := stats(h)
	got := tot.Latency
	for _, q := range []struct {
		name      string
		p         float64
		got, want float64
	}{{"p50", 50, got.P50Ms, want.P50Ms}, {"p90", 90, got.P90Ms, want.P90Ms}, {"p99", 99, got.P99Ms, want.P99Ms},
		{"p99.9", 99.9, got.P999Ms, want.P999Ms}, {"max", 100, got.MaxMs, want.MaxMs}} {
		if q.got != q.want {
			t.Errorf("%s: merged %v ms, pooled HdrHistogram %v ms", q.name, q.got, q.want)
		}
		// The order statistic HdrHistogram reports: the sample of rank
		// p/100·n rounded to the nearest (hdr's ValueAtPercentile).
		k := min(max(int(q.p/100*float64(len(lat))+0.5)-1, 0), len(lat)-1)
		exact := lat[k] / 1e3
		if math.Abs(q.got-exact) > exact*1e-3+1e-3 {
			t.Errorf("%s: merged %v ms, exact pooled order statistic %v ms (beyond 3 significant digits)", q.name, q.got, exact)
		}
	}
	// Every generator's share showed up, and the series sum to the total.
	var seriesSum int64
	for _, r := range res.Series {
		if r.Operation == "total" {
			seriesSum += r.Requests
		}
	}
	if seriesSum != tot.Count {
		t.Errorf("merged series total %d, summary %d", seriesSum, tot.Count)
	}
	if n := len(res.Generator.PerGenerator); n != 3 {
		t.Errorf("per-generator audits: %d, want 3", n)
	}
	var sends int64
	for _, g := range res.Generator.PerGenerator {
		sends += g.Sends
	}
	if res.Generator.Sends != sends || sends == 0 {
		t.Errorf("merged sends %d, the generators' sum %d", res.Generator.Sends, sends)
	}
	// The merged latency.hlog holds the window: its intervals sum to the
	// total's histogram.
	lats, _, err := readHlog(filepath.Join(out, "latency.hlog"))
	if err != nil {
		t.Fatal(err)
	}
	sum := newHist()
	for _, iv := range lats["total"] {
		sum.Merge(iv.h)
	}
	if !sum.Equals(h) {
		t.Errorf("merged latency.hlog's total intervals (%d requests) differ from the pooled histogram (%d)", sum.TotalCount(), h.TotalCount())
	}
}

// TestShardsInterleave: constant arrivals of N generators, each shifted
// by I/N of its gap, are one schedule at the full rate.
func TestShardsInterleave(t *testing.T) {
	srv := fixedServer(t, 0)
	const rate, n = 300.0, 3
	cfg := Config{Target: srv.URL, Rate: rate, Duration: Duration(time.Second), RawSamples: true, Generators: intp(n)}
	dirs := runShards(t, cfg, n)
	for i, d := range dirs {
		rows := readSamples(t, filepath.Join(d, "samples.parquet"))
		if len(rows) < int(rate/n)-1 {
			t.Fatalf("generator %d sent %d, want about %v", i, len(rows), rate/n)
		}
		for _, r := range rows {
			// Arrival k of generator i is meant at (k·N + i) / rate: the
			// (k·N + i)-th of one schedule at the full rate.
			x := float64(r.TNs) * rate / 1e9
			j := math.Round(x)
			if math.Abs(x-j) > 1e-5 || int(j)%n != i {
				t.Fatalf("generator %d: an arrival at %d ns is arrival %.6f of the whole schedule, want an integer ≡ %d mod %d", i, r.TNs, x, i, n)
			}
		}
	}
}

func TestMergeRefusesDifferentLoads(t *testing.T) {
	srv := fixedServer(t, 0)
	a := runShards(t, Config{Target: srv.URL, Rate: 50, Duration: Duration(time.Second)}, 1)
	b := runShards(t, Config{Target: srv.URL, Rate: 50, Duration: Duration(time.Second), Request: &Request{Path: "/other"}}, 1)
	if _, err := Merge(a[0], b[0]); err == nil {
		t.Fatal("Merge of two different loads succeeded")
	}
	if _, err := Merge(); err == nil {
		t.Fatal("Merge of nothing succeeded")
	}
}

// TestMergeShardWarnings: the generators' warnings, from a shard.json of
// today (kind and text) or of an svclab before kinds (plain strings),
// merge into the same warnings: each names its generator after its kind,
// and the bottlenecks are one generator_bottleneck line for the whole.
func TestMergeShardWarnings(t *testing.T) {
	old := []string{
		`{"shard": "0/2", "warnings": ["generator_bottleneck: CPU", "saturated: completed 1.0 req/s", "interrupted after 1.0 s of measurement"]}`,
		`{"shard": "1/2", "warnings": ["stalled: no answer for 1.5 s"]}`,
	}
	typed := []string{
		`{"shard": "0/2", "warnings": [{"kind": "generator_bottleneck", "text": "generator_bottleneck: CPU"}, {"kind": "saturated", "text": "saturated: completed 1.0 req/s"}, {"kind": "interrupted", "text": "interrupted after 1.0 s of measurement"}]}`,
		`{"shard": "1/2", "warnings": [{"kind": "stalled", "text": "stalled: no answer for 1.5 s"}]}`,
	}
	want := []warn.Warning{
		{Kind: warn.GeneratorBottleneck, Text: "generator_bottleneck: generator 0/2: CPU"},
		{Kind: warn.Saturated, Text: "saturated: generator 0/2: completed 1.0 req/s"},
		{Kind: warn.Interrupted, Text: "generator 0/2: interrupted after 1.0 s of measurement"},
		{Kind: warn.Stalled, Text: "stalled: generator 1/2: no answer for 1.5 s"},
	}
	for name, files := range map[string][]string{"old": old, "typed": typed} {
		var shards []*shardResult
		for i, f := range files {
			s := &shardResult{sum: Summary{Generator: &Generator{Verdict: VerdictOK}}}
			if err := json.Unmarshal([]byte(f), &s.info); err != nil {
				t.Fatalf("%s shard %d: %v", name, i, err)
			}
			shards = append(shards, s)
		}
		shards[0].sum.Generator = &Generator{Verdict: VerdictBottleneck, Bottleneck: true, Reason: "CPU"}
		_, got := mergeAudits(shards)
		if !slices.Equal(got, want) {
			t.Errorf("%s shard.json: merged warnings\n%+v\nwant\n%+v", name, got, want)
		}
	}
}
