package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

const linkedSrc = `
[experiment]
until = "decided"
max_runs = 40
[[experiment.questions]]
name = "mesh cost"
effect = "mesh"
by = ["deploy.transport"]
margin = 1.10
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
mesh = [ { "deploy.mtls" = false, "deploy.tracing" = 0.0 },
         { "deploy.mtls" = true,  "deploy.tracing" = 1.0 } ]
`

// A linked factor's level sets each of its keys in the run's spec, and
// the run records the level as its table, which the analysis reads.
func TestLinkedFactorPlan(t *testing.T) {
	p, err := PlanSpecForTest(t, linkedSrc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Runs[:4] {
		level := r.Levels["mesh"].(map[string]any)
		rs := p.SpecOf(r)
		if rs.Deploy.MTLS != level["deploy.mtls"] || rs.Deploy.Tracing != level["deploy.tracing"] || rs.Deploy.Transport != r.Levels["deploy.transport"] {
			t.Errorf("run %s levels %v: spec has mtls %v tracing %v transport %s", r.ID, r.Levels, rs.Deploy.MTLS, rs.Deploy.Tracing, rs.Deploy.Transport)
		}
	}
	if got := p.Design.Describe(p.Design.Points[3]); got != "deploy.transport=http mesh={mtls=true, tracing=1}" {
		t.Errorf("Describe = %q", got)
	}
	b, err := json.Marshal(p.Runs[0].Levels)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"mesh":{"deploy.mtls":`) {
		t.Errorf("run.json levels = %s, want mesh as its table of keys", b)
	}
}

// PlanSpecForTest plans src with fixed timing.
func PlanSpecForTest(t *testing.T, src string) (*Plan, error) {
	t.Helper()
	return NewPlan(context.Background(), mustParse(t, src), 7, func(s *spec.Spec) (Timing, error) {
		return Timing{Warmup: time.Second, Duration: 5 * time.Second}, nil
	})
}

// A sequential plan holds the blocks its budget allows, each every design
// point once, numbered by repetition; experiment.json lists the first
// block's runs and the resolved spec the analysis reads the questions from.
func TestSequentialPlanBlocks(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		blocks int
	}{
		{"max_runs", linkedSrc, 10},
		{"max_runs not a multiple", strings.Replace(linkedSrc, "max_runs = 40", "max_runs = 43", 1), 10},
		// 4 runs of 1s + 5s + 1.5s overhead, 7 s more for the two with
		// tracing (no traced requests counted: the test's timing has
		// none), and 5 s for the analysis: 49 s a block, so 10m is 12.2
		// blocks, rounded up.
		{"budget", strings.Replace(linkedSrc, "max_runs = 40", "budget = \"10m\"", 1), 13},
		{"budget under max_runs", strings.Replace(linkedSrc, "max_runs = 40", "max_runs = 400\nbudget = \"61s\"", 1), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PlanSpecForTest(t, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Sequential() || p.Repetitions != tt.blocks || len(p.Runs) != 4*tt.blocks {
				t.Fatalf("sequential %v, %d blocks, %d runs; want %d blocks", p.Sequential(), p.Repetitions, len(p.Runs), tt.blocks)
			}
			for b := 0; b < tt.blocks; b++ {
				var pts []string
				for _, r := range p.Runs[4*b : 4*b+4] {
					if r.Repetition != b+1 {
						t.Fatalf("run %d in block %d has repetition %d", r.Index, b+1, r.Repetition)
					}
					pts = append(pts, p.Design.Describe(r.Point))
				}
				if slices.Sort(pts); len(slices.Compact(pts)) != 4 {
					t.Errorf("block %d runs %v, want every point once", b+1, pts)
				}
			}
			ef := NewExperimentFile(p, "v", "c", time.Now())
			if len(ef.Runs) != 4 || ef.Sequential == nil || ef.Sequential.Blocks != 1 {
				t.Errorf("experiment.json lists %d runs, sequential %+v; want block 1's 4", len(ef.Runs), ef.Sequential)
			}
			qs := ef.Spec["experiment"].(map[string]any)["questions"].([]any)
			if qs[0].(map[string]any)["effect"] != "mesh" {
				t.Errorf("experiment.json's spec questions = %v", qs)
			}
		})
	}
}

// driveBlocks runs the plan's runs as execute does, with no deployment: a
// committed run is one the map holds, and run commits it.
func driveBlocks(ctx context.Context, sq *sequential, p *Plan, committed map[string]bool, interruptAt int) (ran int, err error) {
	defer func() {
		if err == nil {
			err = sq.end(ctx)
		}
	}()
	for i, r := range p.Runs {
		if stop, err := sq.before(ctx, i); stop || err != nil {
			return ran, err
		}
		if committed[r.ID] {
			continue
		}
		if i == interruptAt {
			return ran, ErrInterrupted
		}
		committed[r.ID] = true
		ran++
		sq.ranOne()
	}
	return ran, nil
}

func TestSequentialStops(t *testing.T) {
	p, err := PlanSpecForTest(t, linkedSrc)
	if err != nil {
		t.Fatal(err)
	}
	// decideAfter is the analysis deciding once n blocks are complete; it
	// counts the committed runs it is shown, as the analysis reads the
	// store.
	decideAfter := func(n int, committed map[string]bool, asked *[]int) DecideFunc {
		return func(_ context.Context, dir string) (Decision, error) {
			*asked = append(*asked, len(committed)/4)
			return Decision{Decided: len(committed) >= 4*n}, nil
		}
	}
	newStore := func(t *testing.T) *Store {
		st, err := CreateStore(t.TempDir(), NewExperimentFile(p, "v", "c", time.Now()), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	read := func(t *testing.T, st *Store) *ExperimentFile {
		ef, err := readExperimentFile(st.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return ef
	}

	t.Run("decided", func(t *testing.T) {
		st, committed, asked := newStore(t), map[string]bool{}, []int{}
		var log bytes.Buffer
		sq, err := newSequential(st, p, decideAfter(3, committed, &asked), &log)
		if err != nil {
			t.Fatal(err)
		}
		ran, err := driveBlocks(context.Background(), sq, p, committed, -1)
		if err != nil || ran != 12 {
			t.Fatalf("ran %d runs, err %v; want 12 (3 blocks)", ran, err)
		}
		if !reflect.DeepEqual(asked, []int{1, 2, 3}) {
			t.Errorf("asked after blocks %v, want 1, 2, 3", asked)
		}
		ef := read(t, st)
		if want := (Stopped{Reason: StopDecided, Blocks: 3, Runs: 12}); ef.Stopped == nil || *ef.Stopped != want {
			t.Errorf("stopped = %+v, want %+v", ef.Stopped, want)
		}
		if len(ef.Runs) != 12 || ef.Design.Repetitions != 3 {
			t.Errorf("experiment.json lists %d runs in %d blocks, want 12 in 3", len(ef.Runs), ef.Design.Repetitions)
		}
		if !strings.Contains(log.String(), "stopped after 3 blocks (12 runs): every question is decided") {
			t.Errorf("log:\n%s", log.String())
		}
		// A resume of a stopped experiment runs nothing and asks nothing.
		asked = nil
		sq, err = newSequential(st, p, decideAfter(3, committed, &asked), &log)
		if err != nil {
			t.Fatal(err)
		}
		if ran, err := driveBlocks(context.Background(), sq, p, committed, -1); ran != 0 || err != nil || len(asked) != 0 {
			t.Errorf("resume of a stopped experiment ran %d, asked %v, err %v", ran, asked, err)
		}
	})

	t.Run("budget", func(t *testing.T) {
		st, committed, asked := newStore(t), map[string]bool{}, []int{}
		sq, err := newSequential(st, p, decideAfter(99, committed, &asked), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if ran, err := driveBlocks(context.Background(), sq, p, committed, -1); err != nil || ran != 40 {
			t.Fatalf("ran %d, err %v; want the 40 runs of max_runs", ran, err)
		}
		if ef := read(t, st); ef.Stopped == nil || *ef.Stopped != (Stopped{Reason: StopBudget, Blocks: 10, Runs: 40}) {
			t.Errorf("stopped = %+v", ef.Stopped)
		}

		// A resume under the same budget runs nothing, and says what
		// would let it go on.
		var log bytes.Buffer
		asked = nil
		sq, err = newSequential(st, p, decideAfter(12, committed, &asked), &log)
		if err != nil {
			t.Fatal(err)
		}
		if ran, err := driveBlocks(context.Background(), sq, p, committed, -1); ran != 0 || err != nil || len(asked) != 0 {
			t.Errorf("resume under the spent budget ran %d, asked %v, err %v", ran, asked, err)
		}
		if !strings.Contains(log.String(), "raise experiment.max_runs or experiment.budget to continue") {
			t.Errorf("log:\n%s", log.String())
		}

		// Raised to 80 runs, it goes on after block 10 and stops when
		// decided, at 12.
		more, err := PlanSpecForTest(t, strings.Replace(linkedSrc, "max_runs = 40", "max_runs = 80", 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := samePlan(more, read(t, st)); err != nil {
			t.Fatalf("samePlan with the budget raised: %v", err)
		}
		log.Reset()
		sq, err = newSequential(st, more, decideAfter(12, committed, &asked), &log)
		if err != nil {
			t.Fatal(err)
		}
		ran, err := driveBlocks(context.Background(), sq, more, committed, -1)
		if err != nil || ran != 8 {
			t.Fatalf("resume with max_runs raised ran %d, err %v; want blocks 11 and 12", ran, err)
		}
		if !reflect.DeepEqual(asked, []int{10, 11, 12}) {
			t.Errorf("asked after blocks %v, want 10, 11, 12", asked)
		}
		ef := read(t, st)
		if ef.Stopped == nil || *ef.Stopped != (Stopped{Reason: StopDecided, Blocks: 12, Runs: 48}) || len(ef.Runs) != 48 || ef.Sequential.MaxRuns != 80 {
			t.Errorf("stopped = %+v, %d runs listed, sequential %+v", ef.Stopped, len(ef.Runs), ef.Sequential)
		}
		if !strings.Contains(log.String(), "the budget now allows more (max_runs 80): continuing after block 10") {
			t.Errorf("log:\n%s", log.String())
		}
	})

	t.Run("resume after an interruption", func(t *testing.T) {
		st, committed, asked := newStore(t), map[string]bool{}, []int{}
		sq, err := newSequential(st, p, decideAfter(4, committed, &asked), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		// Interrupted at the second run of block 3.
		if _, err := driveBlocks(context.Background(), sq, p, committed, 9); !errors.Is(err, ErrInterrupted) {
			t.Fatalf("err = %v", err)
		}
		ef := read(t, st)
		if ef.Stopped != nil || len(ef.Runs) != 12 {
			t.Fatalf("interrupted: stopped %+v, %d runs listed; want none, block 3's listed", ef.Stopped, len(ef.Runs))
		}
		if err := samePlan(p, ef); err != nil {
			t.Errorf("samePlan on resume: %v", err)
		}
		asked = nil
		sq, err = newSequential(st, p, decideAfter(4, committed, &asked), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		ran, err := driveBlocks(context.Background(), sq, p, committed, -1)
		if err != nil || ran != 7 {
			t.Fatalf("resume ran %d, err %v; want the 3 left of block 3 and block 4", ran, err)
		}
		if !reflect.DeepEqual(asked, []int{3, 4}) {
			t.Errorf("resume asked after blocks %v, want 3, 4 (not the blocks it skipped)", asked)
		}
		if ef := read(t, st); ef.Stopped == nil || ef.Stopped.Reason != StopDecided || ef.Stopped.Blocks != 4 {
			t.Errorf("stopped = %+v", ef.Stopped)
		}
	})

	t.Run("time budget", func(t *testing.T) {
		st, committed, asked := newStore(t), map[string]bool{}, []int{}
		sq, err := newSequential(st, p, decideAfter(99, committed, &asked), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		// 30 minutes spent by the end of block 1, of a 45-minute budget:
		// a second block as long would end past it.
		sq.p = &Plan{Spec: p.Spec, Design: p.Design, Runs: p.Runs, Repetitions: p.Repetitions}
		sq.p.Spec.Experiment.Budget = spec.Duration(45 * time.Minute)
		defer func() { sq.p.Spec.Experiment.Budget = 0 }()
		sq.spent = 30 * time.Minute
		if ran, err := driveBlocks(context.Background(), sq, p, committed, -1); err != nil || ran != 4 {
			t.Fatalf("ran %d, err %v; want 1 block", ran, err)
		}
		if ef := read(t, st); ef.Stopped == nil || ef.Stopped.Reason != StopBudget || ef.Stopped.Blocks != 1 || ef.Sequential.ElapsedS < 1800 {
			t.Errorf("stopped = %+v, sequential %+v", ef.Stopped, ef.Sequential)
		}
	})

	t.Run("analysis fails", func(t *testing.T) {
		st := newStore(t)
		sq, err := newSequential(st, p, func(context.Context, string) (Decision, error) {
			return Decision{}, errors.New("exit status 2: no run finished ok")
		}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = driveBlocks(context.Background(), sq, p, map[string]bool{}, -1)
		if err == nil || !strings.Contains(err.Error(), "ask the analysis after block 1: exit status 2: no run finished ok") || !strings.Contains(err.Error(), "--resume "+st.Dir) {
			t.Errorf("err = %v", err)
		}
	})
}

// A fixed design's experiment.json lists every run and has no stop.
func TestFixedDesignUnchanged(t *testing.T) {
	src := strings.NewReplacer("until = \"decided\"\nmax_runs = 40\n", "repetitions = 3\n").Replace(linkedSrc)
	p, err := PlanSpecForTest(t, src)
	if err != nil {
		t.Fatal(err)
	}
	ef := NewExperimentFile(p, "v", "c", time.Now())
	if p.Sequential() || len(ef.Runs) != 12 || ef.Sequential != nil || ef.Design.Repetitions != 3 {
		t.Errorf("fixed design: sequential %v, %d runs listed, %+v", p.Sequential(), len(ef.Runs), ef.Sequential)
	}
	st, err := CreateStore(t.TempDir(), ef, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sq, err := newSequential(st, p, nil, nil)
	if sq != nil || err != nil {
		t.Errorf("newSequential on a fixed design = %v, %v", sq, err)
	}
	if _, err := os.Stat(filepath.Join(st.Dir, "experiment.json")); err != nil {
		t.Fatal(err)
	}
}

// The time estimate counts what each design point's features add to its
// deployment and teardown, and a sequential plan the analysis's looks.
func TestEstimateCountsFeatures(t *testing.T) {
	fixed := strings.Replace(linkedSrc, "until = \"decided\"\nmax_runs = 40\n", "repetitions = 3\n", 1)
	p, err := PlanSpecForTest(t, fixed)
	if err != nil {
		t.Fatal(err)
	}
	// 12 runs of 1 s + 5 s + 1.5 s; the 6 with tracing 7 s more.
	if want := 12*(7500*time.Millisecond) + 6*tracingOverhead; p.Estimate() != want {
		t.Errorf("fixed estimate %v, want %v", p.Estimate(), want)
	}
	p, err = PlanSpecForTest(t, linkedSrc)
	if err != nil {
		t.Fatal(err)
	}
	if want := 40*(7500*time.Millisecond) + 20*tracingOverhead + 10*decideOverhead; p.Estimate() != want {
		t.Errorf("sequential estimate %v, want %v", p.Estimate(), want)
	}
}

// A load.target a linked factor's level sets is refused off this machine,
// at its key in the level, as a plain factor's is.
func TestCheckRemoteLinked(t *testing.T) {
	s := mustParse(t, "[experiment.factors]\nwhere = [ { \"load.target\" = \"http://127.0.0.1:9/\", \"load.rate\" = 10 },\n  { \"load.target\" = \"http://10.9.8.7/\", \"load.rate\" = 20 } ]\n")
	err := CheckRemote(s, true)
	if err == nil || !strings.Contains(err.Error(), `x.toml:3: experiment.factors.where[1]."load.target": target "http://10.9.8.7/" is not on this machine`) {
		t.Errorf("err = %v", err)
	}
}

// A traced run's teardown reads every span back, so its estimate grows
// with the requests it traced; the load table gives them.
func TestEstimateCountsTracedRequests(t *testing.T) {
	mesh := func(tracing float64) *spec.Spec {
		return mustParse(t, fmt.Sprintf("[deploy]\ntracing = %v\nmetrics = true\nsidecar = \"envoy\"\n", tracing))
	}
	base := perRunOverhead + metricsOverhead + sidecarOverhead
	tests := []struct {
		name   string
		s      *spec.Spec
		timing Timing
		want   time.Duration
	}{
		{"untraced", mesh(0), Timing{Requests: 1200}, base},
		{"closed loop", mesh(1), Timing{}, base + tracingOverhead},
		{"all traced", mesh(1), Timing{Requests: 1200}, base + tracingOverhead + 1200*tracedRequestCost},
		{"a tenth traced", mesh(0.1), Timing{Requests: 1200}, base + tracingOverhead + 120*tracedRequestCost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := deployOverhead(tc.s, tc.timing); got != tc.want {
				t.Errorf("deployOverhead = %v, want %v", got, tc.want)
			}
		})
	}
	// The requests come from the load table: the warm-up at its own rate.
	s := mustParse(t, "[app]\nname = \"chain\"\nhops = 3\n[deploy]\ntracing = 1.0\n[load]\nmode = \"open\"\nrate = 100\nwarmup = \"2s\"\nwarmup_rate = 10\nduration = \"10s\"\n")
	pr, err := Prepare(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Timing().Requests; got != 100*10+10*2 {
		t.Errorf("Timing().Requests = %v, want 1020", got)
	}
}

// A sequential experiment's resume may change its budget, and nothing
// else; the new budget is recorded for the next resume.
func TestResumeBudgetOnly(t *testing.T) {
	p, err := PlanSpecForTest(t, linkedSrc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := CreateStore(t.TempDir(), NewExperimentFile(p, "v", "c", time.Now()), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ef, err := readExperimentFile(st.Dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		src  string
		ok   bool
	}{
		{"max_runs raised", strings.Replace(linkedSrc, "max_runs = 40", "max_runs = 80", 1), true},
		{"a time budget added", strings.Replace(linkedSrc, "max_runs = 40", "max_runs = 40\nbudget = \"2h\"", 1), true},
		{"a margin changed", strings.Replace(linkedSrc, "margin = 1.10", "margin = 1.20", 1), false},
		{"a level changed", strings.Replace(linkedSrc, `["grpc", "http"]`, `["grpc", "netrpc"]`, 1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := budgetOnly(ef, mustParse(t, tc.src)); got != tc.ok {
				t.Errorf("budgetOnly = %v, want %v", got, tc.ok)
			}
		})
	}
	// The fixed design it was not: no budget to change.
	fixed := *ef
	fixed.Sequential = nil
	if budgetOnly(&fixed, mustParse(t, strings.Replace(linkedSrc, "max_runs = 40", "max_runs = 80", 1))) {
		t.Error("budgetOnly on a fixed design's experiment.json = true")
	}

	more, err := PlanSpecForTest(t, tests[0].src)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := newBudget(st, ef, more, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "(max_runs 40 → 80): it goes on under the new one") {
		t.Errorf("log: %s", log.String())
	}
	again, err := readExperimentFile(st.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.SpecSHA256 != SpecHash(more.Spec) || again.Spec["experiment"].(map[string]any)["max_runs"] != 80.0 {
		t.Errorf("experiment.json after the new budget: sha %.12s, spec experiment %v", again.SpecSHA256, again.Spec["experiment"])
	}
}

// TestBlocksNeeded pins the fewest blocks a confidence sequence needs for a
// finite interval to testdata/blocks_needed.json, which the analysis's
// test (test_blocks_needed_pinned) holds its own rule to: the plan warns
// by the analysis's numbers.
func TestBlocksNeeded(t *testing.T) {
	b, err := os.ReadFile("testdata/blocks_needed.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Confidence float64
		Blocks     int
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatalf("testdata/blocks_needed.json: %v", err)
	}
	if len(cases) < 10 {
		t.Fatalf("testdata/blocks_needed.json holds %d cases", len(cases))
	}
	for _, c := range cases {
		if got := blocksNeeded(c.Confidence); got != c.Blocks {
			t.Errorf("blocksNeeded(%v) = %d, want %d", c.Confidence, got, c.Blocks)
		}
	}
}

// TestFewBlocks: a sequential plan whose max_runs or budget holds fewer
// blocks than its questions need for a finite interval is warned of, with
// the question that needs the most, what holds it back and how far to
// raise it; one that holds enough, or a fixed design, is not.
func TestFewBlocks(t *testing.T) {
	// A question by deploy.transport has two ratios, each at 97.5%: 5
	// blocks; one without by has one, at 95%: 4.
	oneRatio := strings.Replace(linkedSrc, "by = [\"deploy.transport\"]\n", "", 1)
	budget := func(src, b string) string { return strings.Replace(src, "max_runs = 40", b, 1) }
	tests := []struct {
		name string
		src  string
		want []string // empty: no warning
	}{
		{"max_runs holds enough", budget(linkedSrc, "max_runs = 20"), nil},
		{"max_runs short", budget(linkedSrc, "max_runs = 12"), []string{
			`question "mesh cost" cannot be decided within the budget: its confidence sequences need 5 usable blocks for a finite interval (its 2 ratios at 97.5% each)`,
			"experiment.max_runs = 12 holds 3 blocks of 4 runs",
			"raise experiment.max_runs to 20 (docs/ANALYSIS.md",
		}},
		{"one ratio, short", budget(oneRatio, "max_runs = 12"), []string{"need 4 usable blocks", "(its ratio at 95%)", "raise experiment.max_runs to 16"}},
		{"one ratio holds enough", budget(oneRatio, "max_runs = 16"), nil},
		// 49 s a block (TestSequentialPlanBlocks): 3m fits 3 whole ones.
		{"budget short", budget(linkedSrc, "budget = \"3m\""), []string{
			"experiment.budget = 3m0s fits 3 at the estimated 49s a block",
			"raise experiment.budget to 4m5s (",
		}},
		{"budget holds enough", budget(linkedSrc, "budget = \"4m5s\""), nil},
		{"both short", budget(linkedSrc, "max_runs = 8\nbudget = \"2m\""), []string{
			"experiment.max_runs = 8 holds 2 blocks of 4 runs, and experiment.budget = 2m0s fits 2 at",
			"raise experiment.max_runs to 20 and experiment.budget to 4m5s",
		}},
		{"the question that needs the most", budget(oneRatio, "max_runs = 12") + `[[experiment.questions]]
name = "mesh cost by transport"
effect = "mesh"
by = ["deploy.transport"]
`, []string{`question "mesh cost by transport" cannot`, "need 5 usable blocks"}},
		{"fixed design", strings.NewReplacer("until = \"decided\"\n", "", "max_runs = 40", "repetitions = 1").Replace(linkedSrc), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PlanSpecForTest(t, tt.src)
			if err != nil {
				t.Fatal(err)
			}
			got := p.FewBlocks()
			if len(tt.want) == 0 && got != "" {
				t.Errorf("warned: %s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

// A deployer that takes longer to deploy and tear down a run than the
// local one (the kube deployer: pods, a namespace to delete) adds its
// Traits.RunOverhead to each run's estimate, and a Java host's start
// counts once, however many Java components.
func TestEstimateCountsTheDeployer(t *testing.T) {
	kube, err := deploy.Lookup("kube")
	if err != nil {
		t.Fatal(err)
	}
	extra := kube.Traits().RunOverhead
	if extra <= 0 {
		t.Fatalf("the kube deployer's RunOverhead is %v; a cluster's run takes longer than a local one", extra)
	}
	for _, tc := range []struct {
		deploy string
		want   time.Duration
	}{
		{"deployer = \"local\"\n", perRunOverhead},
		{"deployer = \"netns\"\n", perRunOverhead},
		{"deployer = \"kube\"\n", perRunOverhead + extra},
		{"[deploy.languages]\nselector = \"python\"\n", perRunOverhead},
		{"[deploy.languages]\nselector = \"java\"\n", perRunOverhead + javaOverhead},
		{"[deploy.languages]\nfrontend = \"java\"\nselector = \"java\"\n", perRunOverhead + javaOverhead},
		{"deployer = \"kube\"\n[deploy.languages]\nselector = \"java\"\n", perRunOverhead + extra + javaOverhead},
	} {
		s := mustParse(t, "[deploy]\n"+tc.deploy)
		if got := deployOverhead(s, Timing{}); got != tc.want {
			t.Errorf("%q: deployOverhead = %v, want %v", tc.deploy, got, tc.want)
		}
	}
}
