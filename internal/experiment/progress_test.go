package experiment

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/warn"
)

// TestProgressNotTerminal: a log that is not a terminal (a file, CI) gets
// the experiment's header, a line per phase of each run, a line every
// progressEvery while measuring and no more, and the run's result line
// with its measured figures; a run of a spec without factors is named by
// its ID, not by an empty "[]".
func TestProgressNotTerminal(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		wantLabel string // how run 1 is named, after its ID
		wantSeed  string
	}{
		{
			name:      "no factors, seed drawn",
			src:       "[experiment]\nrepetitions = 2\n",
			wantLabel: "",
			wantSeed:  "order random (seed 7; --seed 7 repeats this order)",
		},
		{
			name:      "factors, seed in the spec",
			src:       "[experiment]\nseed = 3\n[experiment.factors]\n\"deploy.transport\" = [\"grpc\", \"http\"]\n",
			wantLabel: " transport=",
			wantSeed:  "order random (seed 3),",
		},
		{
			// A blocked order (a sequential design's) is drawn too.
			name:      "blocked, seed drawn",
			src:       "[experiment]\nrepetitions = 2\norder = \"blocked\"\n",
			wantLabel: "",
			wantSeed:  "order blocked (seed 7; --seed 7 repeats this order)",
		},
		{
			name:      "sequential: no seed orders it",
			src:       "[experiment]\nrepetitions = 2\norder = \"sequential\"\n",
			wantLabel: "",
			wantSeed:  "order sequential, estimated",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(context.Background(), mustParse(t, tc.src), 7, fixedTiming)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			pg := newProgress(&b, false, p, time.Now())
			lines := func() []string { return strings.Split(strings.TrimSpace(b.String()), "\n") }
			if got := lines(); len(got) != 1 || !strings.HasPrefix(got[0], "experiment x: 2 runs, ") || !strings.Contains(got[0], tc.wantSeed) {
				t.Fatalf("header %q, want the run count and %q", got, tc.wantSeed)
			}

			r := p.Runs[0]
			label := "run 1/2 " + r.ID
			if tc.wantLabel != "" {
				label += fmt.Sprint(tc.wantLabel, r.Levels["deploy.transport"])
			}
			pg.begin(r, "deploying")
			pg.begin(r, "warm-up")
			// The warm-up's own line was just printed; a long warm-up
			// gets one every progressEvery too.
			pg.update(load.Progress{Elapsed: -2 * time.Second, Warmup: true, RPS: 180})
			pg.lastLine = time.Now().Add(-progressEvery)
			pg.update(load.Progress{Elapsed: -time.Second, Warmup: true, RPS: 190, Errors: 1, P99: 2 * time.Millisecond})
			pg.update(load.Progress{Elapsed: time.Second, RPS: 200, TotalErrors: 4, P99: 3 * time.Millisecond})
			// Within progressEvery of the last line: nothing more.
			for i := 2; i < 5; i++ {
				pg.update(load.Progress{Elapsed: time.Duration(i) * time.Second, RPS: 200})
			}
			got := lines()
			want := []string{"deploying", "warm-up", "warm-up | 190.0 rps  1 err  p99 2.00 ms", "measuring 1s/5s | 200.0 rps  4 err  p99 3.00 ms"}
			if len(got) != 1+len(want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(got), 1+len(want), b.String())
			}
			for i, w := range want {
				if !strings.HasPrefix(got[i+1], label+" "+w+" | elapsed ") {
					t.Errorf("line %d = %q, want it to start with %q", i+2, got[i+1], label+" "+w)
				}
			}
			// progressEvery after the last line, measuring gets a line.
			pg.lastLine = time.Now().Add(-progressEvery)
			pg.update(load.Progress{Elapsed: 12 * time.Second, RPS: 201.5, TotalErrors: 5, P99: 1500 * time.Microsecond})
			if got := lines(); !strings.HasPrefix(got[len(got)-1], label+" measuring 12s/5s | 201.5 rps  5 err  p99 1.50 ms") {
				t.Errorf("periodic line %q", got[len(got)-1])
			}

			pg.measured(&load.Result{Summary: load.Summary{Operations: []load.Operation{
				{Name: "total", Kind: "total", Count: 1000, Errors: 5, RPS: 199.9, Latency: load.Stats{P50Ms: 0.41, P99Ms: 1.25}},
			}}})
			pg.finish(&RunFile{Status: "ok"})
			got = lines()
			if w := label + ": ok | 1000 requests  199.9 rps  5 err  p50 0.41 ms  p99 1.25 ms | elapsed "; !strings.HasPrefix(got[len(got)-1], w) {
				t.Errorf("result line %q, want it to start with %q", got[len(got)-1], w)
			}
			if strings.Contains(b.String(), "[]") || strings.Contains(b.String(), "\r") {
				t.Errorf("the log holds an empty level list or a carriage return:\n%s", b.String())
			}
			// The next run starts without the last one's totals.
			pg.begin(p.Runs[1], "deploying")
			pg.finish(&RunFile{Status: "failed"})
			if got := lines(); !strings.HasPrefix(got[len(got)-1], "run 2/2 "+p.Runs[1].ID) || !strings.Contains(got[len(got)-1], ": failed | elapsed ") {
				t.Errorf("failed run's line %q", got[len(got)-1])
			}
		})
	}
}

// TestProgressFlagged: a run the generator's self-audit flagged says so
// on its result line, with how far off it was; an ok run and a failed
// one (whose numbers nobody reads) do not.
func TestProgressFlagged(t *testing.T) {
	bottleneck := []warn.Warning{warn.Newf(warn.GeneratorBottleneck, "send lag p99 lies above the floor")}
	tests := []struct {
		name     string
		gen      load.Generator
		status   string
		warnings []warn.Warning
		want     string // what follows the label, up to the figures
	}{
		{"ok", load.Generator{LagP99Ms: 0.1, Verdict: load.VerdictOK}, "ok", nil, ": ok | "},
		{"lag", load.Generator{LagP99Ms: 1.225, CPUPercent: 40, Bottleneck: true}, "ok", bottleneck, ": ok, flagged: send lag 98% of p99 | "},
		{"dropped", load.Generator{LagP99Ms: 0.5, Dropped: 12, Bottleneck: true}, "ok", bottleneck, ": ok, flagged: send lag 40% of p99, 12 arrivals dropped | "},
		{"cpu", load.Generator{LagP99Ms: 0.05, CPUPercent: 187, Bottleneck: true}, "ok", bottleneck, ": ok, flagged: send lag 4% of p99, generator CPU 187% | "},
		{"failed", load.Generator{LagP99Ms: 1.2, Bottleneck: true}, "failed", bottleneck, ": failed | "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(context.Background(), mustParse(t, "[experiment]\nseed = 1\n"), 1, fixedTiming)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			pg := newProgress(&b, false, p, time.Now())
			pg.begin(p.Runs[0], "deploying")
			pg.measured(&load.Result{Generator: tc.gen, Summary: load.Summary{Operations: []load.Operation{
				{Name: "total", Kind: "total", Count: 1000, RPS: 200, Latency: load.Stats{P50Ms: 0.41, P99Ms: 1.25}},
			}}})
			pg.finish(&RunFile{Status: tc.status, Warnings: tc.warnings})
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if last, w := lines[len(lines)-1], "run 1/1 "+p.Runs[0].ID+tc.want; !strings.HasPrefix(last, w) {
				t.Errorf("result line %q, want it to start with %q", last, w)
			}
		})
	}
}

// TestProgressTerminal: on a terminal the run's line is rewritten in
// place, and its result line stays, ended by a newline.
func TestProgressTerminal(t *testing.T) {
	p, err := NewPlan(context.Background(), mustParse(t, "[experiment]\nseed = 1\n"), 1, fixedTiming)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	pg := newProgress(&b, true, p, time.Now())
	pg.begin(p.Runs[0], "deploying")
	for i := 1; i < 4; i++ {
		pg.update(load.Progress{Elapsed: time.Duration(i) * time.Second, RPS: 100})
	}
	out := b.String()
	if n := strings.Count(out, "\r"); n != 4 {
		t.Errorf("%d rewrites, want 4 (deploying and three seconds):\n%q", n, out)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("lines end before the run does:\n%q", out)
	}
	pg.finish(&RunFile{Status: "ok"})
	pg.done()
	out = b.String()
	if !strings.HasSuffix(out, "\n") || strings.HasSuffix(out, "\n\n") || !strings.Contains(out, "\rrun 1/1 "+p.Runs[0].ID+": ok | ") {
		t.Errorf("result line not kept, or a blank line after it:\n%q", out)
	}
}

// TestProgressLearnsRunTime: until a run has finished, what is left is the
// plan's estimate; after, it is the runs' own time, deploy and stop
// included, which a mesh can make several times the estimate.
func TestProgressLearnsRunTime(t *testing.T) {
	p, err := NewPlan(context.Background(), mustParse(t, "[experiment]\nrepetitions = 4\n"), 7, fixedTiming)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	now := time.Now()
	pg := newProgress(&b, false, p, now)
	per := p.Estimate() / 4
	if got, want := pg.clock(now), "left ~"+fmtClock(4*per); !strings.HasSuffix(got, want) {
		t.Errorf("before any run: %q, want %q", got, want)
	}
	pg.begin(p.Runs[0], "deploying")
	pg.runStart = now.Add(-20 * time.Second) // the first run took 20 s
	pg.update(load.Progress{Elapsed: 4 * time.Second, RPS: 100})
	pg.finish(&RunFile{Status: "ok"})
	// The result line counts the three runs left, and nothing off them.
	if got, want := b.String(), "left ~"+fmtClock(3*20*time.Second)+"\n"; !strings.HasSuffix(got, want) {
		t.Errorf("result line %q, want it to end %q", got, want)
	}
	if got, want := pg.clock(time.Now()), "left ~"+fmtClock(3*20*time.Second); !strings.HasSuffix(got, want) {
		t.Errorf("after a 20 s run: %q, want %q", got, want)
	}
	pg.begin(p.Runs[1], "deploying")
	pg.runStart = time.Now().Add(-5 * time.Second) // 5 s into the second
	if got, want := pg.clock(time.Now()), "left ~"+fmtClock(3*20*time.Second-5*time.Second); !strings.HasSuffix(got, want) {
		t.Errorf("5 s into the second run: %q, want %q", got, want)
	}
	if per == 20*time.Second {
		t.Fatal("the plan's estimate must differ from the runs' time for this test to tell them apart")
	}
}
