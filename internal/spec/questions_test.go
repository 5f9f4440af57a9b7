package spec

import (
	"reflect"
	"strings"
	"testing"
)

// meshSpec is the example: a question about a linked factor, per
// transport.
const meshSpec = `[app]
name = "chain"
[deploy]
placement = "split"
[experiment]
until = "decided"
max_runs = 200
budget = "45m"

[[experiment.questions]]
name = "mesh cost by transport"
effect = "mesh"
by = ["deploy.transport"]
metric = "p50_ms"
margin = 1.10

[experiment.factors]
"deploy.transport" = ["grpc", "http"]
mesh = [ { "deploy.mtls" = false, "deploy.tracing" = 0.0 },
         { "deploy.mtls" = true,  "deploy.tracing" = 1.0 } ]
`

func TestQuestionsAndLinkedFactor(t *testing.T) {
	s, err := Parse("x.toml", []byte(meshSpec))
	if err != nil {
		t.Fatal(err)
	}
	e := s.Experiment
	want := []Question{{Name: "mesh cost by transport", Effect: "mesh", By: []string{"deploy.transport"}, Metric: "p50_ms", Margin: []float64{1.10}, Line: 10}}
	if !reflect.DeepEqual(e.Questions, want) {
		t.Errorf("questions = %+v, want %+v", e.Questions, want)
	}
	if e.Until != UntilDecided || e.Budget.D().Minutes() != 45 || e.MaxRuns != 200 || e.Order != "blocked" {
		t.Errorf("until %q budget %s max_runs %d order %q", e.Until, e.Budget, e.MaxRuns, e.Order)
	}
	mesh := e.Factors[1]
	if !mesh.Linked() || !reflect.DeepEqual(mesh.Keys, []string{"deploy.mtls", "deploy.tracing"}) || e.Factors[0].Linked() {
		t.Fatalf("factors = %+v", e.Factors)
	}
	if got := mesh.FormatLevel(mesh.Levels[1]); got != "mtls=true, tracing=1" {
		t.Errorf("FormatLevel = %q", got)
	}
	rs, err := s.With(map[string]any{"deploy.transport": "http", "mesh": mesh.Levels[1]})
	if err != nil {
		t.Fatal(err)
	}
	if !rs.Deploy.MTLS || rs.Deploy.Tracing != 1 || rs.Deploy.Transport != "http" {
		t.Errorf("effective deploy = mtls %v tracing %v transport %q", rs.Deploy.MTLS, rs.Deploy.Tracing, rs.Deploy.Transport)
	}
}

// A linked level's value is checked as a plain factor's, and the error
// points at the line of its key in that level.
func TestLinkedLevelValueErrorAtItsLine(t *testing.T) {
	src := strings.Replace(meshSpec, `"deploy.tracing" = 1.0 }`, `"deploy.tracing" = 2.0 }`, 1)
	s, err := Parse("x.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.With(map[string]any{"deploy.transport": "grpc", "mesh": s.Experiment.Factors[1].Levels[1]})
	if err == nil || !strings.HasPrefix(err.Error(), "x.toml:20: deploy.tracing:") {
		t.Errorf("err = %v, want it at line 20, deploy.tracing", err)
	}
}

func TestQuestionErrors(t *testing.T) {
	base := "[experiment]\nmax_runs = 100\n[experiment.factors]\n\"deploy.transport\" = [\"grpc\", \"http\"]\n\"load.rate\" = [10, 20]\n"
	tests := []struct {
		name, src string
		want      []string
	}{
		{"every mistake at once", base + "[[experiment.questions]]\neffect = \"deploy.transprot\"\nby = [\"load.rate\", \"load.rte\"]\nmetric = \"p42\"\nmargin = -1\nwhat = 1\n",
			[]string{
				`x.toml:7: experiment.questions[0].effect: "deploy.transprot" is not a factor of this experiment; the factors are "deploy.transport", "load.rate"`,
				`x.toml:8: experiment.questions[0].by[1]: "load.rte" is not a factor`,
				`x.toml:9: experiment.questions[0].metric: unknown metric "p42"`,
				`x.toml:10: experiment.questions[0].margin: a margin is a ratio above 0 other than 1, got -1`,
				`x.toml:11: experiment.questions[0].what: unknown key`,
			}},
		{"no effect", base + "[[experiment.questions]]\nname = \"q\"\n", []string{"x.toml:6: experiment.questions[0]: needs effect"}},
		{"by the effect", base + "[[experiment.questions]]\neffect = \"load.rate\"\nby = [\"load.rate\"]\n", []string{"experiment.questions[0].by[0]: \"load.rate\" is the effect itself"}},
		{"margin pair", base + "[[experiment.questions]]\neffect = \"load.rate\"\nmargin = [1.1, 0.9]\n", []string{"x.toml:8: experiment.questions[0].margin: an equivalence margin [low, high] needs 0 < low < 1 < high, got [1.1, 0.9]"}},
		{"margin one", base + "[[experiment.questions]]\neffect = \"load.rate\"\nmargin = 1\n", []string{"ratio above 0 other than 1, got 1"}},
		{"margin string", base + "[[experiment.questions]]\neffect = \"load.rate\"\nmargin = \"10%\"\n", []string{"experiment.questions[0].margin: must be a number or a pair"}},
		{"duplicate name", base + "[[experiment.questions]]\nname = \"a\"\neffect = \"load.rate\"\n[[experiment.questions]]\nname = \"a\"\neffect = \"load.rate\"\n", []string{"x.toml:10: experiment.questions[1].name: \"a\" names question 1 too"}},
		{"until without questions or budget", "[experiment]\nuntil = \"decided\"\n[experiment.factors]\n\"load.rate\" = [10, 20]\n",
			[]string{"x.toml:2: experiment.until: needs [[experiment.questions]]", "x.toml:2: experiment.until: needs a budget"}},
		{"until other", "[experiment]\nuntil = \"done\"\n", []string{`x.toml:2: experiment.until: must be "decided"`}},
		{"until with repetitions and order", base, nil},
		{"budget without until", "[experiment]\nbudget = \"1h\"\n", []string{"x.toml:2: experiment.budget: a budget bounds until"}},
		{"budget no unit", "[experiment]\nbudget = 45\n", []string{"x.toml:2: experiment.budget:"}},
		{"linked level not a table", "[experiment.factors]\nmesh = [ { \"deploy.mtls\" = true }, 2 ]\n", []string{"x.toml:2: experiment.factors.mesh[1]: a linked factor's level is a table of the keys it sets"}},
		{"linked bare dotted key", "[experiment.factors]\nmesh = [ { deploy.mtls = false }, { deploy.mtls = true } ]\n", []string{`experiment.factors.mesh[0].deploy: a linked factor sets keys of [app], [deploy] or [load], written as a dotted path such as "deploy.mtls"; write the key whole and quoted`}},
		{"linked other table", "[experiment.factors]\nmesh = [ { \"experiment.seed\" = 1 }, { \"experiment.seed\" = 2 } ]\n", []string{`x.toml:2: experiment.factors.mesh[0]."experiment.seed": a linked factor sets keys of [app], [deploy] or [load]`}},
		{"linked keys differ", "[experiment.factors]\nmesh = [ { \"deploy.mtls\" = false },\n { \"deploy.tracing\" = 1.0 } ]\n", []string{"x.toml:3: experiment.factors.mesh[1]: sets deploy.tracing, but level 1 sets deploy.mtls; every level of a linked factor sets the same keys"}},
		{"linked overlaps a factor", "[experiment.factors]\n\"deploy.mtls\" = [false, true]\nmesh = [ { \"deploy.mtls\" = false }, { \"deploy.mtls\" = true } ]\n", []string{`x.toml:3: experiment.factors.mesh: sets deploy.mtls, which factor "deploy.mtls" sets too`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			if tt.want == nil { // until with repetitions and order written
				src = strings.Replace(src, "max_runs = 100\n", "max_runs = 100\nrepetitions = 2\norder = \"random\"\nuntil = \"decided\"\n", 1)
				src += "[[experiment.questions]]\neffect = \"load.rate\"\n"
				tt.want = []string{"x.toml:3: experiment.repetitions: the blocks of until", "x.toml:4: experiment.order: until = \"decided\" runs every design point once per block"}
			}
			_, err := Parse("x.toml", []byte(src))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to hold %q", err, w)
				}
			}
		})
	}
}
