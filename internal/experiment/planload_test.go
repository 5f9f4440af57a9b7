package experiment

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// TestPlanWithoutLoad: a spec without [load] is refused as one for
// `svclab up`, naming its file; a bad load key of a spec that has a
// [load] table, and errors elsewhere, keep their own message.
func TestPlanWithoutLoad(t *testing.T) {
	tests := []struct {
		name, src string
		want      string
		sets      []string
	}{
		{"no [load]", "[app]\nname = \"chain\"\n", "x.toml: the spec has no [load] table, so it can be deployed (svclab up x.toml) but not run or planned", nil},
		{"[load] without rate", "[app]\nname = \"chain\"\n[load]\nduration = \"1s\"\n", "x.toml:3: load.rate: must be > 0, got 0", nil},
		{"load factor, no table", "[app]\nname = \"chain\"\n[experiment.factors]\n\"load.duration\" = [\"1s\", \"2s\"]\n", "load.rate: must be > 0", nil},
		{"no [load], bad deployer first", "[app]\nname = \"chain\"\n[deploy]\ndeployer = \"moon\"\n", "deploy.deployer", nil},
		{"no [load], --set of part of one", "[app]\nname = \"chain\"\n",
			"x.toml: load.rate: must be > 0, got 0 (the spec has no [load] table and --set gave only load.duration, load.warmup: give the rest with --set",
			[]string{"load.duration=1s", "load.warmup=1s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("x.toml", []byte(tc.src), tc.sets...)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = PlanRun(context.Background(), s, 1)
			var se *spec.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PlanRun error %v, want a spec error with %q", err, tc.want)
			}
		})
	}
}

// TestPlanReportsEveryPoint: planning reports the mistakes of every design
// point in one error, in file order, and one that several points share
// once.
func TestPlanReportsEveryPoint(t *testing.T) {
	src := `[app]
name = "chain"
hops = -1
[load]
duration = "1s"
[experiment.factors]
"load.rate" = [-1, 10, -2]
"deploy.transport" = ["grpc", "http"]
`
	s, err := spec.Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = PlanRun(context.Background(), s, 1)
	if err == nil {
		t.Fatal("PlanRun took a spec with mistakes")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{"x.toml:3: app.hops", "x.toml:7: load.rate: must be > 0, got -1", "x.toml:7: load.rate: must be > 0, got -2"}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("error %d = %q, want %q", i, got[i], w)
		}
	}
}

// TestPlanMemory: a plan, shown (svclab plan) or run (svclab run), keeps
// no design point's spec or deployment, so that a design of a million
// points plans in the memory of its runs; each point held about 4 KiB
// before (the runner's about 5 KiB: the deployment of each run by ID).
func TestPlanMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("prepares 20,000 design points")
	}
	var rates, timeouts []string
	for i := 1; i <= 100; i++ {
		rates = append(rates, fmt.Sprint(i))
	}
	for i := 1; i <= 200; i++ {
		timeouts = append(timeouts, fmt.Sprintf("%q", fmt.Sprintf("%dms", i)))
	}
	src := fmt.Sprintf("[app]\nname = \"chain\"\n[load]\nrate = 10\nduration = \"1s\"\n[experiment]\nmax_runs = 100000\n[experiment.factors]\n\"load.rate\" = [%s]\n\"load.timeout\" = [%s]\n",
		strings.Join(rates, ", "), strings.Join(timeouts, ", "))
	s, err := spec.Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		goruntime.GC()
		var ms goruntime.MemStats
		goruntime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, tc := range []struct {
		name string
		plan func() (*Plan, any, error)
	}{
		{"shown", func() (*Plan, any, error) {
			p, err := CheckPlan(context.Background(), s, 1)
			return p, nil, err
		}},
		{"run", func() (*Plan, any, error) { return PlanRun(context.Background(), s, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := heap()
			p, kept, err := tc.plan()
			if err != nil {
				t.Fatal(err)
			}
			grown := heap() - min(before, heap())
			per := grown / uint64(len(p.Runs))
			if per > 1024 {
				t.Errorf("the plan holds %d bytes per run (%d runs, %d MiB); want at most 1 KiB", per, len(p.Runs), grown>>20)
			}
			if pr, err := p.Prepare(p.Runs[len(p.Runs)-1]); err != nil || fmt.Sprint(pr.Load.Rate) != fmt.Sprint(p.Runs[len(p.Runs)-1].Levels["load.rate"]) {
				t.Errorf("Prepare gave %+v, %v; want the last run's point again", pr, err)
			}
			goruntime.KeepAlive(p)
			goruntime.KeepAlive(kept)
		})
	}
}

// TestPlanRunKeepsBacking: of the points it drops, PlanRun keeps what the
// runner starts before the first run, one topology for each distinct set
// of backing services (the shop's database differs with its products),
// not one a point.
func TestPlanRunKeepsBacking(t *testing.T) {
	s, err := spec.Parse("x.toml", []byte(`[app]
name = "shop"
[load]
rate = 10
duration = "1s"
[experiment.factors]
"app.products" = [10, 20]
"app.op" = ["list", "get"]
"load.rate" = [1, 2]
`))
	if err != nil {
		t.Fatal(err)
	}
	p, backed, err := PlanRun(context.Background(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	var setups []string
	for _, topo := range backed {
		for _, b := range runtime.BackingsOf(topo) {
			setups = append(setups, b.Setup)
		}
	}
	if len(p.Runs) != 8 || len(setups) != 2 || setups[0] == setups[1] {
		t.Errorf("%d runs kept %d topologies with %d setups; want 8 runs and the 2 distinct setups", len(p.Runs), len(backed), len(setups))
	}
}
