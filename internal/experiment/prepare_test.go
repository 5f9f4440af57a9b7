package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// TestPrepareChecksDeployer checks that a run naming an unknown deployer
// fails while the plan is made, before anything starts, at the factor that
// set it.
func TestPrepareChecksDeployer(t *testing.T) {
	s := mustParse(t, `[app]
name = "chain"
[experiment.factors]
"deploy.deployer" = ["nowhere", "moon"]
`)
	_, _, err := PlanRun(context.Background(), s, 1)
	found := 0
	for _, e := range spec.Unjoin(err) {
		var se *spec.Error
		if errors.As(e, &se) && se.Key == "deploy.deployer" && se.Line == 4 {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("PlanRun error %v, want one about each level of deploy.deployer at line 4", err)
	}
}

// TestBackingLeavesRemoteOut checks that the shop under the kube deployer
// starts no PostgreSQL on this machine: its database runs as a pod of
// the deployment.
func TestBackingLeavesRemoteOut(t *testing.T) {
	s := mustParse(t, `[app]
name = "shop"
[deploy]
deployer = "kube"
[load]
rate = 10
`)
	p, backed, err := PlanRun(context.Background(), s, 1)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := startBacking(context.Background(), backed, io.Discard)
	if err != nil {
		t.Fatalf("startBacking: %v", err)
	}
	defer closeBacking(pool, io.Discard)
	pr, err := (&execution{p: p, pool: pool}).prepare(p.Runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(runtime.BackingsOf(pr.Runtime)) == 0 {
		t.Fatal("the shop declares no backing service; the test needs one")
	}
	if pids := pool.Servers(); len(pids) != 0 || len(backed) != 0 || pr.Backing != nil {
		t.Errorf("a kube run started backing servers %v here (%d topologies kept, pool given: %v)", pids, len(backed), pr.Backing != nil)
	}
}

// TestAllErrorsInOnePass runs specs with several mistakes, in different
// tables and in different stages of checking (keys, values, the
// deployment's resolution), through the path `svclab plan` and `run`
// take (spec.Parse, then Check on a spec-level error or PlanRun), and
// checks that every mistake is reported, each at its file, line and key,
// and nothing else: no mistake hides another, and none is made up from
// a default that stood in for a wrong key.
func TestAllErrorsInOnePass(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []wantError
	}{{
		name: "app key, app value, deploy value and load value",
		src: `[app]
name = "chain"
hopz = 3
payload = "medium"
[deploy]
transport = "pigeon"
[load]
rate = -5
`,
		want: []wantError{
			{3, "app.hopz", `unknown key (did you mean "hops"?)`},
			{4, "app.payload", `got "medium"`},
			{6, "deploy.transport", `unknown transport "pigeon"`},
			{8, "load.rate", "must be > 0"},
		},
	}, {
		// [app] does not apply to a system svclab does not deploy: that
		// it names no app is no mistake. What the deployer asks of
		// [load] is checked beside [experiment]'s mistake.
		name: "an external system's factor",
		src: `[deploy]
deployer = "external"
[deploy.external]
url = "http://127.0.0.1:18081"
[load]
rate = 10
[experiment.factors]
"load.rate" = [20]
`,
		want: []wantError{
			{5, "load", "the external system's requests are not svclab's to know"},
			{8, `experiment.factors."load.rate"`, "a factor needs at least two levels, got 1"},
		},
	}, {
		name: "a local system's factor, and its app",
		src: `[deploy]
deployer = "local"
[load]
rate = 10
[experiment.factors]
"load.rate" = [20]
`,
		want: []wantError{
			{0, "app.name", "missing: name the app"},
			{6, `experiment.factors."load.rate"`, "a factor needs at least two levels, got 1"},
		},
	}, {
		name: "a placement's name beside the app's mistakes",
		src: `[app]
name = "chain"
hops = -1
[deploy]
placement = "nowhere"
[load]
rate = 10
`,
		want: []wantError{
			{3, "app.hops", "must be"},
			{5, "deploy.placement", `unknown placement "nowhere"`},
		},
	}, {
		name: "values of deploy the spec checks",
		src: `[app]
name = "chain"
[deploy]
network = "udp"
start_timeout = "0s"
http_codec = "xml"
colour = "red"
[load]
rate = 10
`,
		want: []wantError{
			{4, "deploy.network", `got "udp"`},
			{5, "deploy.start_timeout", "must be positive"},
			{6, "deploy.http_codec", `got "xml"`},
			{7, "deploy.colour", "unknown key"},
		},
	}, {
		name: "resolution of deploy against the app",
		src: `[app]
name = "chain"
[deploy]
transport = "pigeon"
[deploy.resources.nowhere]
cpu = 1
[deploy.languages]
hop9 = "java"
[load]
rate = 10
`,
		want: []wantError{
			{4, "deploy.transport", `unknown transport "pigeon"`},
			{5, "deploy.resources.nowhere", `"nowhere" is no group`},
			{8, "deploy.languages.hop9", `no component "hop9"`},
		},
	}, {
		name: "load keys and load values",
		src: `[app]
name = "chain"
[load]
rate = "fast"
max_inflight = -1
`,
		want: []wantError{
			{4, "load.rate", "must be a number"},
			{5, "load.max_inflight", "must be >= 0"},
		},
	}, {
		name: "a misspelt key is not also missing",
		src: `[app]
name = "chain"
paylod = "large"
[load]
rte = 10
`,
		want: []wantError{
			{3, "app.paylod", `did you mean "payload"?`},
			{5, "load.rte", `did you mean "rate"?`},
		},
	}, {
		name: "a value of the wrong type is not also checked as its default",
		src: `[app]
name = "chain"
[deploy]
start_timeout = "soon"
[load]
rate = 10
duration = 5
`,
		want: []wantError{
			{4, "deploy.start_timeout", "not a duration"},
			{7, "load.duration", "needs a unit"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("bad.toml", []byte(tc.src))
			if err != nil && s != nil {
				err = Check(s, err, true)
			} else if err == nil {
				_, _, err = PlanRun(context.Background(), s, 1)
			}
			checkErrors(t, err, tc.want)
		})
	}
}

// wantError is an error a test expects of bad.toml: at its line (0: a
// key the file does not write, nor any table around it) and key, with
// text in its message.
type wantError struct {
	line int
	key  string
	text string
}

// checkErrors checks that err holds each of want and nothing else.
func checkErrors(t *testing.T, err error, want []wantError) {
	t.Helper()
	var got []error
	if err != nil {
		got = spec.Unjoin(err)
	}
	for _, w := range want {
		prefix := fmt.Sprintf("bad.toml:%d: %s: ", w.line, w.key)
		if w.line == 0 {
			prefix = fmt.Sprintf("bad.toml: %s: ", w.key)
		}
		if !slices.ContainsFunc(got, func(e error) bool {
			return strings.HasPrefix(e.Error(), prefix) && strings.Contains(e.Error(), w.text)
		}) {
			t.Errorf("no error %q...%q in\n%v", prefix, w.text, err)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d errors, want %d:\n%v", len(got), len(want), err)
	}
}

// TestFactorMistakesHideNoOthers checks specs with a mistake under
// [experiment.factors], which leaves the design points unknown, through
// the path `svclab plan` and `run` take (spec.Parse, then CheckDesign):
// the mistakes of [deploy], [load], the questions and the factors are
// all reported at once, each at its file, line and key, and nothing
// else; a factor's key, and only that, is not checked at its base value;
// a factor that names no key is an error of its own.
func TestFactorMistakesHideNoOthers(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []wantError
	}{{
		name: "the new user's spec",
		src: `[app]
name = "chain"
[deploy]
placement = "monolit"
[load]
rate = -5
[experiment.factors]
"deploy.transport" = ["grpc"]
"load.rat" = [1, 2]
`,
		want: []wantError{
			{4, "deploy.placement", `unknown placement "monolit"`},
			{6, "load.rate", "must be > 0, got -5"},
			{8, `experiment.factors."deploy.transport"`, "a factor needs at least two levels, got 1"},
			{9, `experiment.factors."load.rat"`, `unknown key (did you mean "load.rate"?)`},
		},
	}, {
		name: "every table, the factors and the questions",
		src: `[app]
name = "chain"
hopz = 3
[deploy]
placement = "monolit"
network = "udp"
[load]
rate = -5
max_inflight = -1
rte = 3
[experiment]
order = "sideways"
[experiment.factors]
"deploy.transport" = ["grpc"]
"load.rat" = [1, 2]
"deploy.transprot" = ["grpc", "http"]
"load.duration" = ["1s", "1s"]
mesh = [ { "deploy.mtlz" = false }, { "deploy.mtlz" = true } ]
[[experiment.questions]]
effect = "deploy.transport"
margin = 1.0
metric = "p42"
[[experiment.questions]]
effect = "nope"
`,
		want: []wantError{
			{3, "app.hopz", `did you mean "hops"?`},
			{5, "deploy.placement", `unknown placement "monolit"`},
			{6, "deploy.network", `got "udp"`},
			{8, "load.rate", "must be > 0"},
			{9, "load.max_inflight", "must be >= 0"},
			{10, "load.rte", `did you mean "rate"?`},
			{12, "experiment.order", `got "sideways"`},
			{14, `experiment.factors."deploy.transport"`, "at least two levels"},
			{15, `experiment.factors."load.rat"`, `unknown key (did you mean "load.rate"?)`},
			{16, `experiment.factors."deploy.transprot"`, `unknown key (did you mean "deploy.transport"?)`},
			{17, `experiment.factors."load.duration"`, `level "1s" is listed twice`},
			{18, `experiment.factors.mesh[0]."deploy.mtlz"`, `unknown key (did you mean "deploy.mtls"?)`},
			{21, "experiment.questions[0].margin", "a margin is a ratio above 0 other than 1"},
			{22, "experiment.questions[0].metric", `unknown metric "p42"`},
			{24, "experiment.questions[1].effect", `"nope" is not a factor of this experiment`},
		},
	}, {
		// The base values of the keys the factors set are no run's:
		// rate and placement are not checked, the keys beside them are.
		name: "a factor's key is not checked at its base value",
		src: `[app]
name = "chain"
[deploy]
placement = "nowhere"
transport = "pigeon"
[load]
rate = -5
max_inflight = -1
[experiment.factors]
"load.rate" = [100, 200]
"deploy.placement" = ["monolith", "split"]
"load.duration" = ["5s"]
`,
		want: []wantError{
			{5, "deploy.transport", `unknown transport "pigeon"`},
			{8, "load.max_inflight", "must be >= 0"},
			{12, `experiment.factors."load.duration"`, "at least two levels"},
		},
	}, {
		name: "a key only a factor gives is not missing",
		src: `[app]
name = "chain"
[load]
duration = "5s"
[experiment.factors]
"load.rate" = [100]
`,
		want: []wantError{
			{6, `experiment.factors."load.rate"`, "at least two levels"},
		},
	}, {
		name: "a factor that is no key of a table",
		src: `[app]
name = "chain"
[load]
rate = 10
[experiment.factors]
rate = [1, 2]
"experiment.seed" = [1]
`,
		want: []wantError{
			{6, "experiment.factors.rate", "a factor must be a key of [app], [deploy] or [load]"},
			{7, `experiment.factors."experiment.seed"`, "at least two levels"},
			{7, `experiment.factors."experiment.seed"`, "a factor must be a key of [app], [deploy] or [load]"},
		},
	}, {
		name: "a good spec",
		src: `[app]
name = "chain"
[load]
rate = 10
duration = "1s"
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
"load.rate" = [10, 20]
[[experiment.questions]]
effect = "deploy.transport"
margin = 1.1
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := spec.Parse("bad.toml", []byte(tc.src))
			switch {
			case err != nil && s != nil:
				err = CheckDesign(ctx, s, spec.Join(err, s.CheckFactorsNotSet()))
			case err == nil:
				_, err = CheckPlan(ctx, s, 1)
			}
			checkErrors(t, err, tc.want)
		})
	}
}
