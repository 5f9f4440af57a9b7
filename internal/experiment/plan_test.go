package experiment

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/spec"
)

func mustParse(t *testing.T, src string) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fixedTiming stands in for the load table's durations; it also decodes
// [load] strictly so that an unknown factor path surfaces as it does in
// the real runner.
func fixedTiming(s *spec.Spec) (Timing, error) {
	var l struct {
		Rate float64 `toml:"rate"`
	}
	if err := s.Decode("load", &l); err != nil {
		return Timing{}, err
	}
	return Timing{Warmup: time.Second, Duration: 5 * time.Second}, nil
}

func TestFullFactorialStandardOrder(t *testing.T) {
	s := mustParse(t, `
[experiment]
order = "sequential"
repetitions = 2
[experiment.factors]
"deploy.transport" = ["grpc", "http", "netrpc"]
"deploy.placement" = ["monolith", "split"]
`)
	p, err := NewPlan(context.Background(), s, 1, fixedTiming)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Design.Points) != 6 || len(p.Runs) != 12 {
		t.Fatalf("points %d runs %d, want 6 and 12", len(p.Design.Points), len(p.Runs))
	}
	// The first factor varies fastest; sequential keeps repetitions together.
	want := []string{"grpc monolith", "grpc monolith", "http monolith", "http monolith", "netrpc monolith"}
	for i, w := range want {
		r := p.Runs[i]
		got := fmt.Sprintf("%v %v", r.Levels["deploy.transport"], r.Levels["deploy.placement"])
		if got != w {
			t.Errorf("run %d = %q, want %q", i+1, got, w)
		}
	}
	if p.Runs[0].Repetition != 1 || p.Runs[1].Repetition != 2 {
		t.Errorf("repetitions = %d, %d", p.Runs[0].Repetition, p.Runs[1].Repetition)
	}
	if rs := p.SpecOf(p.Runs[3]); rs.Deploy.Transport != "http" || rs.Deploy.Placement != "monolith" {
		t.Errorf("run spec not effective: %+v", rs.Deploy)
	}
	if got := p.Estimate(); got != 12*(6*time.Second+perRunOverhead) {
		t.Errorf("Estimate = %v", got)
	}
}

func TestInterleavedOrder(t *testing.T) {
	s := mustParse(t, `
[experiment]
order = "interleaved"
repetitions = 3
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
`)
	p, err := NewPlan(context.Background(), s, 1, fixedTiming)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Runs {
		got = append(got, fmt.Sprintf("%v%d", r.Levels["deploy.transport"], r.Repetition))
	}
	if strings.Join(got, " ") != "grpc1 http1 grpc2 http2 grpc3 http3" {
		t.Errorf("order = %v", got)
	}
}

// TestBlockedOrder: each repetition runs every point once, together, in
// an order drawn anew for each repetition from the seed.
func TestBlockedOrder(t *testing.T) {
	src := `
[experiment]
order = "blocked"
repetitions = 8
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
"load.rate" = [10, 100]
`
	order := func(seed int64) [][]string {
		p, err := NewPlan(context.Background(), mustParse(t, src), seed, fixedTiming)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Runs) != 32 {
			t.Fatalf("%d runs, want 32", len(p.Runs))
		}
		var blocks [][]string
		for b := 0; b < 8; b++ {
			var pts []string
			for _, r := range p.Runs[4*b : 4*b+4] {
				if r.Repetition != b+1 {
					t.Errorf("run %s of repetition %d in block %d", r.ID, r.Repetition, b+1)
				}
				pts = append(pts, fmt.Sprintf("%v %v", r.Levels["deploy.transport"], r.Levels["load.rate"]))
			}
			if got := slices.Sorted(slices.Values(pts)); !reflect.DeepEqual(got, []string{"grpc 10", "grpc 100", "http 10", "http 100"}) {
				t.Errorf("block %d has points %v, want each of 4 once", b+1, pts)
			}
			blocks = append(blocks, pts)
		}
		return blocks
	}
	a := order(42)
	if !reflect.DeepEqual(a, order(42)) {
		t.Error("same seed, different order")
	}
	distinct := map[string]bool{}
	for _, b := range a {
		distinct[fmt.Sprint(b)] = true
	}
	// Eight draws of 24 orders all alike would be a fixed order.
	if len(distinct) < 2 {
		t.Errorf("every repetition ran its points in one order: %v", a[0])
	}
}

func TestRandomOrderReproducibleFromSeed(t *testing.T) {
	src := `
[experiment]
repetitions = 5
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
"load.rate" = [10, 100]
`
	order := func(seed int64) []string {
		p, err := NewPlan(context.Background(), mustParse(t, src), seed, fixedTiming)
		if err != nil {
			t.Fatal(err)
		}
		if p.Seed != seed {
			t.Errorf("plan seed = %d, want %d", p.Seed, seed)
		}
		var ids []string
		for _, r := range p.Runs {
			ids = append(ids, r.ID)
		}
		return ids
	}
	a, b, c := order(42), order(42), order(43)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different order:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 42 and 43 gave the same order of 20 runs")
	}
	// Every (point, repetition) appears exactly once.
	seen := map[string]bool{}
	p, _ := NewPlan(context.Background(), mustParse(t, src), 42, fixedTiming)
	for _, r := range p.Runs {
		k := fmt.Sprint(r.Point, r.Repetition)
		if seen[k] {
			t.Errorf("slot %s twice", k)
		}
		seen[k] = true
	}
	if len(seen) != 20 {
		t.Errorf("%d distinct slots, want 20", len(seen))
	}
	// A seed in the spec wins over the one offered.
	p, _ = NewPlan(context.Background(), mustParse(t, strings.Replace(src, "repetitions = 5", "repetitions = 5\nseed = 42", 1)), 99, fixedTiming)
	if p.Seed != 42 {
		t.Errorf("spec seed ignored: %d", p.Seed)
	}
}

// The textbook 2^(4-1) design with D = ABC (Montgomery, Design and Analysis
// of Experiments, table 8.3; Jain, ch. 19): the base 2^3 design in standard
// order with D the product of the signs of A, B and C.
func TestFractionalHalfFraction(t *testing.T) {
	s := mustParse(t, `
[experiment]
design = "fractional"
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
"deploy.placement" = ["monolith", "split"]
"load.rate" = [10, 100]
"app.payload" = ["small", "large"]
[experiment.generators]
D = "ABC"
`)
	d, err := NewDesign(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"----", "+--+", "-+-+", "++--", "--++", "+-+-", "-++-", "++++"}
	var got []string
	for _, p := range d.Points {
		var b strings.Builder
		for _, l := range p {
			b.WriteByte("-+"[l])
		}
		got = append(got, b.String())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("points = %v\nwant     %v", got, want)
	}
	if !reflect.DeepEqual(d.Defining, []string{"ABCD"}) || d.Resolution != 4 {
		t.Errorf("defining = %v resolution %d", d.Defining, d.Resolution)
	}
	wantAliases := []string{"I = ABCD", "A = BCD", "B = ACD", "C = ABD", "D = ABC", "AB = CD", "AC = BD", "AD = BC"}
	if !reflect.DeepEqual(d.Aliases, wantAliases) {
		t.Errorf("aliases = %q\nwant %q", d.Aliases, wantAliases)
	}
}

// A 2^(5-2) design with D = AB and E = AC has I = ABD = ACE = BCDE.
func TestFractionalQuarterFraction(t *testing.T) {
	s := mustParse(t, `
[experiment]
design = "fractional"
[experiment.factors]
a = [1, 2]
b = [1, 2]
c = [1, 2]
d = [1, 2]
e = [1, 2]
[experiment.generators]
D = "AB"
E = "AC"
`)
	d, err := NewDesign(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Points) != 8 || !reflect.DeepEqual(d.Defining, []string{"ABD", "ACE", "BCDE"}) || d.Resolution != 3 {
		t.Errorf("points %d defining %v resolution %d", len(d.Points), d.Defining, d.Resolution)
	}
	if d.Aliases[1] != "A = BD = CE = ABCDE" {
		t.Errorf("alias of A = %q", d.Aliases[1])
	}
	for _, p := range d.Points {
		sa, sb, sc := 2*p[0]-1, 2*p[1]-1, 2*p[2]-1
		if 2*p[3]-1 != sa*sb || 2*p[4]-1 != sa*sc {
			t.Errorf("point %v breaks D = AB or E = AC", p)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown path", "[experiment.factors]\n\"load.rte\" = [1, 2]\n", `x.toml:2: experiment.factors."load.rte": unknown key (did you mean "load.rate"?)`},
		{"not a spec table", "[experiment.factors]\n\"experiment.seed\" = [1, 2]\n", "x.toml:2: experiment.factors.\"experiment.seed\": a factor must be a key of [app], [deploy] or [load]"},
		{"three levels in fractional", "[experiment]\ndesign = \"fractional\"\n[experiment.factors]\na = [1, 2, 3]\nb = [1, 2]\nc = [1, 2]\n[experiment.generators]\nC = \"AB\"\n", "x.toml:4: experiment.factors.a: a fractional design needs two levels per factor, got 3"},
		{"generated base", "[experiment]\ndesign = \"fractional\"\n[experiment.factors]\na = [1, 2]\nb = [1, 2]\nc = [1, 2]\nd = [1, 2]\n[experiment.generators]\nC = \"AB\"\nD = \"AC\"\n", "C is itself generated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPlan(context.Background(), mustParse(t, tt.src), 1, fixedTiming)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant %q", err, tt.want)
			}
		})
	}
}

// TestEstimateNeverWraps: the total of many long runs saturates instead of
// wrapping negative, and NewPlan refuses a plan that would.
func TestEstimateNeverWraps(t *testing.T) {
	long := 2000000 * time.Hour
	tests := []struct {
		name             string
		runs             int
		warmup, duration time.Duration
		want             time.Duration
	}{
		{"short", 12, time.Second, 5 * time.Second, 12 * (6*time.Second + perRunOverhead)},
		{"one long run fits", 1, 0, long, long + perRunOverhead},
		{"many long runs", 12, 0, long, maxDuration},
		{"sum of one run's parts", 1, maxDuration - time.Second, maxDuration - time.Second, maxDuration},
		{"no runs", 0, long, long, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{Runs: make([]Run, tt.runs), Warmup: tt.warmup, Duration: tt.duration}
			if got := p.Estimate(); got != tt.want {
				t.Errorf("Estimate = %v, want %v", got, tt.want)
			}
		})
	}

	s := mustParse(t, "[experiment]\nrepetitions = 12\n")
	_, err := NewPlan(context.Background(), s, 1, func(*spec.Spec) (Timing, error) {
		return Timing{Duration: long}, nil
	})
	if err == nil || !strings.Contains(err.Error(), "12 runs of warm-up 0s, measurement 2000000h0m0s and cool-down 0s each would take more than 292 years") {
		t.Errorf("NewPlan error = %v, want the plan refused for its length", err)
	}
}

// TestPlanInert: a note of spec.Inert is said once, with every design
// point it holds for, numbered as `svclab plan` numbers them.
func TestPlanInert(t *testing.T) {
	src := "[app]\nname = \"chain\"\n[experiment]\nrepetitions = 2\n[experiment.factors]\n" +
		"\"deploy.sidecar\" = [\"none\", \"envoy\"]\n\"deploy.proxy_mode\" = [\"sidecar\", \"node\"]\n\"deploy.mtls\" = [false, true]\n"
	p, err := NewPlan(context.Background(), mustParse(t, src), 1, fixedTiming)
	if err != nil {
		t.Fatal(err)
	}
	var want []int // the points with sidecar none and proxy_mode node
	for i, pt := range p.Design.Points {
		if pt[0] == 0 && pt[1] == 1 {
			want = append(want, i+1)
		}
	}
	got := p.Inert()
	if len(got) != 1 || len(want) != 2 {
		t.Fatalf("notes %q (points %v)", got, want)
	}
	if prefix := fmt.Sprintf("design points %d and %d: deploy.proxy_mode = \"node\" does nothing", want[0], want[1]); !strings.HasPrefix(got[0], prefix) {
		t.Errorf("note %q, want it to begin %q", got[0], prefix)
	}
}

// TestExperimentTimingMeansWhatItSays: experiment.warmup and duration,
// when written, replace the load's, and a warm-up of "0s" is none (it
// was taken for "use load.warmup").
func TestExperimentTimingMeansWhatItSays(t *testing.T) {
	tests := []struct {
		exp             string
		warmup, measure time.Duration
	}{
		{"", time.Second, 5 * time.Second},
		{"warmup = \"0s\"\n", 0, 5 * time.Second},
		{"warmup = \"3s\"\nduration = \"7s\"\n", 3 * time.Second, 7 * time.Second},
	}
	for _, tc := range tests {
		p, err := NewPlan(context.Background(), mustParse(t, "[experiment]\n"+tc.exp), 1, fixedTiming)
		if err != nil {
			t.Fatal(err)
		}
		if p.Warmup != tc.warmup || p.Duration != tc.measure {
			t.Errorf("%q: warm-up %s, measure %s; want %s and %s", tc.exp, p.Warmup, p.Duration, tc.warmup, tc.measure)
		}
	}
}
