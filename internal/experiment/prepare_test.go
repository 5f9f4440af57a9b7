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
	type want struct {
		line int
		key  string
		text string
	}
	for _, tc := range []struct {
		name string
		src  string
		want []want
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
		want: []want{
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
		want: []want{
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
		want: []want{
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
		want: []want{
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
		want: []want{
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
		want: []want{
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
		want: []want{
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
		want: []want{
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
		want: []want{
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
			got := spec.Unjoin(err)
			for _, w := range tc.want {
				prefix := fmt.Sprintf("bad.toml:%d: %s: ", w.line, w.key)
				if w.line == 0 { // a key the file does not write, nor any table around it
					prefix = fmt.Sprintf("bad.toml: %s: ", w.key)
				}
				if !slices.ContainsFunc(got, func(e error) bool {
					return strings.HasPrefix(e.Error(), prefix) && strings.Contains(e.Error(), w.text)
				}) {
					t.Errorf("no error %q...%q in\n%v", prefix, w.text, err)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%v", len(got), len(tc.want), err)
			}
		})
	}
}
