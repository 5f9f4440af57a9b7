package experiment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/svclab/svclab/apps/all"
	_ "github.com/svclab/svclab/internal/deploy/all"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
)

// The parts of a valid spec that bad specs are made from.
const (
	appT    = "[app]\nname = \"chain\"\nhops = 3\n"
	deployT = "[deploy]\ntransport = \"grpc\"\n"
	loadT   = "[load]\nrate = 100\nduration = \"2s\"\n"
	okSpec  = appT + deployT + loadT
)

// badSpec is one input svclab must refuse, and where it must say the
// mistake is.
type badSpec struct {
	name string
	src  string   // the spec file
	sets []string // --set overrides, applied in order
	// key is the dotted key the first error names, and at the text on the
	// line it must point to (unique in src); with a flag, the error names
	// that --set flag instead of a line.
	key, at, flag string
	want          string // a substring of the message
}

// factorsOf writes n factors of the given number of levels, on app keys
// the spec counts before any app sees them.
func factorsOf(n, levels int) string {
	var b strings.Builder
	b.WriteString("[experiment.factors]\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\"app.f%d\" = [", i)
		for l := 0; l < levels; l++ {
			fmt.Fprintf(&b, "%d, ", l)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// levelsUpTo lists the levels 1, 2, ... n.
func levelsUpTo(n int) string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprint(i + 1)
	}
	return strings.Join(l, ", ")
}

// stagesSpec has two [[load.stages]] entries; the second one's body is
// given.
func stagesSpec(second string) string {
	return appT + deployT + "[load]\nrate = 100\n[[load.stages]]\ntype = \"ramp\"\nduration = \"1s\"\n[[load.stages]]\n" + second + "\n"
}

var badSpecs = []badSpec{
	// TOML syntax.
	{name: "unterminated string", src: appT + "[deploy]\ntransport = \"grpc\n" + loadT, at: `transport = "grpc`, want: "strings cannot have new lines"},
	{name: "duplicate key", src: appT + deployT + "[load]\nrate = 1\nrate = 2\n", key: "load.rate", at: "rate = 2", want: "key rate is already defined"},
	{name: "dotted key written twice", src: appT + deployT + "[load]\nrequest.path = \"/a\"\nrequest.path = \"/b\"\n", key: "load.request.path", at: "/b", want: "already defined"},
	{name: "table written twice", src: okSpec + "[deploy] # again\nnetwork = \"tcp\"\n", key: "deploy", at: "# again", want: "table deploy already exists"},
	{name: "missing value", src: appT + "[deploy]\ntransport =\n" + loadT, at: "transport =", want: "expected"},
	{name: "integer too large", src: "[app]\nname = \"chain\"\nhops = 99999999999999999999\n" + deployT + loadT, at: "hops", want: "integer"},
	{name: "bare non-ASCII key", src: appT + "näme = 1\n" + deployT + loadT, at: "näme", want: `quote any other: "näme"`},
	{name: "non-ASCII first character", src: appT + "é = 1\n" + deployT + loadT, at: "é = 1", want: "U+00E9 'é'"},

	// Tables.
	{name: "unknown table", src: okSpec + "[lod]\nrate = 1\n", key: "lod", at: "[lod]", want: "unknown table"},
	{name: "table as a value", src: "load = 5\n" + appT + deployT, key: "load", at: "load = 5", want: "must be a table"},
	{name: "unknown table by flag", src: okSpec, sets: []string{"lod.rate=1"}, key: "lod", flag: "--set lod.rate=1", want: `unknown table (a spec has only [app], [deploy], [load], [experiment]) (did you mean "load"?)`},

	// Unknown keys, wherever they are written.
	{name: "deploy key", src: appT + "[deploy]\ntransprot = \"grpc\"\n" + loadT, key: "deploy.transprot", at: "transprot", want: `unknown key (did you mean "transport"?)`},
	{name: "load key", src: appT + deployT + "[load]\nrte = 100\n", key: "load.rte", at: "rte", want: `did you mean "rate"?`},
	{name: "app key", src: appT + "hopz = 3\n" + deployT + loadT, key: "app.hopz", at: "hopz", want: `did you mean "hops"?`},
	{name: "experiment key", src: okSpec + "[experiment]\nrepetition = 3\n", key: "experiment.repetition", at: "repetition", want: `did you mean "repetitions"?`},
	{name: "key in the wrong case", src: appT + deployT + "[load]\nRate = 100\n", key: "load.Rate", at: "Rate", want: `did you mean "rate"?`},
	{name: "key in the second stage", src: stagesSpec("type = \"step\"\ndurration = \"1s\""), key: "load.stages[1].durration", at: "durration", want: `did you mean "duration"?`},
	{name: "key in load.request", src: okSpec + "[load.request]\nmethod = \"POST\"\npth = \"/\"\n", key: "load.request.pth", at: "pth", want: `did you mean "path"?`},
	{name: "key in an inline table", src: okSpec + "request = {method = \"POST\",\n  pth = \"/\"}\n", key: "load.request.pth", at: "pth", want: `did you mean "path"?`},
	{name: "key in the second inline flow step", src: okSpec + "[load.flow]\nsteps = [\n  {path = \"/a\"},\n  {pth = \"/b\"},\n]\n", key: "load.flow.steps[1].pth", at: "pth", want: `did you mean "path"?`},
	{name: "key in the second flow step table", src: okSpec + "[[load.flow.steps]]\npath = \"/a\"\n[[load.flow.steps]]\nwieght = 2\n", key: "load.flow.steps[1].wieght", at: "wieght", want: `did you mean "weight"?`},
	{name: "key by flag", src: okSpec, sets: []string{"load.rte=5"}, key: "load.rte", flag: "--set load.rte=5", want: `did you mean "rate"?`},
	{name: "factor naming no key", src: okSpec + "[experiment.factors]\n\"load.rte\" = [1, 2]\n", key: `experiment.factors."load.rte"`, at: `"load.rte"`, want: `unknown key (did you mean "load.rate"?)`},

	// Values of the wrong type, in the spec's words.
	{name: "string for a number", src: appT + deployT + "[load]\nrate = \"fast\"\n", key: "load.rate", at: "fast", want: `must be a number, got "fast"`},
	{name: "string for a whole number", src: "[app]\nname = \"chain\"\nhops = \"three\"\n" + deployT + loadT, key: "app.hops", at: "three", want: `must be a whole number, got "three"`},
	{name: "fraction for a whole number", src: "[app]\nname = \"chain\"\nhops = 2.5\n" + deployT + loadT, key: "app.hops", at: "2.5", want: "must be a whole number, got 2.5"},
	{name: "number for a string", src: appT + "payload = 5\n" + deployT + loadT, key: "app.payload", at: "payload", want: "must be a string, got 5"},
	{name: "string for a bool", src: okSpec + "raw_samples = \"yes\"\n", key: "load.raw_samples", at: "raw_samples", want: `must be true or false, got "yes"`},
	{name: "scalar for a list", src: okSpec + "stages = 5\n", key: "load.stages", at: "stages", want: "must be a list, got 5"},
	{name: "scalar for a table", src: okSpec + "request = 5\n", key: "load.request", at: "request", want: "must be a table, got 5"},
	{name: "number for transport", src: appT + "[deploy]\ntransport = 5\n" + loadT, key: "deploy.transport", at: "transport", want: "must be a string, got 5"},
	{name: "scalar for placements", src: appT + "[deploy]\nplacements = 5\n" + loadT, key: "deploy.placements", at: "placements", want: "must be a table, got 5"},
	{name: "string for a placement", src: appT + deployT + "[deploy.placements]\np = \"hop1\"\n" + loadT, key: "deploy.placements.p", at: "p = ", want: `must be a list, got "hop1"`},
	{name: "number in a group", src: appT + deployT + "[deploy.placements]\np = [[\"hop1\"],\n  [\"hop2\", 3]]\n" + loadT, key: "deploy.placements.p[1][1]", at: `["hop2", 3]`, want: "must be a string, got 3"},
	{name: "string for repetitions", src: okSpec + "[experiment]\nrepetitions = \"3\"\n", key: "experiment.repetitions", at: "repetitions", want: `must be a whole number, got "3"`},
	{name: "fraction for a seed", src: okSpec + "[experiment]\nseed = 1.5\n", key: "experiment.seed", at: "seed", want: "must be a whole number, got 1.5"},
	{name: "number for a name", src: okSpec + "[experiment]\nname = 5\n", key: "experiment.name", at: "name = 5", want: "must be a string, got 5"},
	{name: "date for a name", src: okSpec + "[experiment]\nname = 1979-05-27\n", key: "experiment.name", at: "1979", want: "must be a string, got 1979-05-27"},
	{name: "number for a header", src: okSpec + "[load.request]\nheaders = {a = 1}\n", key: "load.request.headers.a", at: "headers", want: "must be a string, got 1"},
	{name: "number for a request path", src: okSpec + "[load.request]\nmethod = \"GET\"\npath = 5\n", key: "load.request.path", at: "path = 5", want: "must be a string, got 5"},
	{name: "string for a stage rate", src: stagesSpec("type = \"step\"\nduration = \"1s\"\nrate = \"x\""), key: "load.stages[1].rate", at: `rate = "x"`, want: `must be a number, got "x"`},
	{name: "string for max_runs", src: okSpec + "[experiment]\nmax_runs = \"many\"\n", key: "experiment.max_runs", at: "max_runs", want: `must be a whole number, got "many"`},
	{name: "factor level of the wrong type", src: okSpec + "[experiment.factors]\n\"load.rate\" = [\"a\", \"b\"]\n", key: "load.rate", at: `"load.rate"`, want: `must be a number, got "a"`},
	{name: "wrong type by flag", src: okSpec, sets: []string{"load.rate=fast"}, key: "load.rate", flag: "--set load.rate=fast", want: `must be a number, got "fast"`},
	{name: "bool for hops by flag", src: okSpec, sets: []string{"app.hops=true"}, key: "app.hops", flag: "--set app.hops=true", want: "must be a whole number, got true"},
	{name: "table for rate by flag", src: okSpec, sets: []string{"load.rate={a = 1}"}, key: "load.rate", flag: "--set load.rate={a = 1}", want: "must be a number, got a table"},

	// Numbers that are not numbers.
	{name: "rate nan", src: appT + deployT + "[load]\nrate = nan\n", key: "load.rate", at: "nan", want: "must be a finite number, got nan"},
	{name: "rate inf", src: appT + deployT + "[load]\nrate = inf\n", key: "load.rate", at: "inf", want: "must be a finite number, got inf"},
	{name: "rate -inf", src: appT + deployT + "[load]\nrate = -inf\n", key: "load.rate", at: "-inf", want: "got -inf"},
	{name: "rate nan by flag", src: okSpec, sets: []string{"load.rate=nan"}, key: "load.rate", flag: "--set load.rate=nan", want: "must be a finite number, got nan"},
	{name: "rate inf by flag", src: okSpec, sets: []string{"load.rate=+inf"}, key: "load.rate", flag: "--set load.rate=+inf", want: "got inf"},
	{name: "stage rate nan", src: stagesSpec("type = \"step\"\nduration = \"1s\"\nrate = nan"), key: "load.stages[1].rate", at: "nan", want: "must be a finite number"},
	{name: "spawn rate nan", src: okSpec + "spawn_rate = nan\n", key: "load.spawn_rate", at: "spawn_rate", want: "must be a finite number"},
	{name: "flow weight inf", src: okSpec + "[load.flow]\norder = \"weighted\"\n[[load.flow.steps]]\npath = \"/\"\nweight = inf\n", key: "load.flow.steps[0].weight", at: "weight = inf", want: "must be a finite number, got inf"},
	{name: "nan as a factor level", src: okSpec + "[experiment.factors]\n\"load.rate\" = [nan, 100]\n", key: "load.rate", at: `"load.rate"`, want: "must be a finite number, got nan"},

	// Durations.
	{name: "duration without a unit", src: appT + deployT + "[load]\nrate = 100\nduration = 6\n", key: "load.duration", at: "duration = 6", want: `needs a unit, e.g. "6s"`},
	{name: "start_timeout without a unit", src: appT + "[deploy]\nstart_timeout = 5\n" + loadT, key: "deploy.start_timeout", at: "start_timeout", want: `needs a unit, e.g. "5s"`},
	{name: "fractional duration without a unit", src: okSpec + "warmup = 1.5\n", key: "load.warmup", at: "warmup", want: `needs a unit, e.g. "1.5s"`},
	{name: "duration string without a unit", src: appT + deployT + "[load]\nrate = 100\nduration = \"6\"\n", key: "load.duration", at: "duration", want: `needs a unit, e.g. "6s"`},
	{name: "not a duration", src: appT + deployT + "[load]\nrate = 100\nduration = \"soon\"\n", key: "load.duration", at: "soon", want: "not a duration"},
	{name: "negative duration", src: appT + deployT + "[load]\nrate = 100\nduration = \"-1s\"\n", key: "load.duration", at: "-1s", want: "must not be negative"},
	{name: "duration past time's range", src: okSpec + "timeout = \"9999999999h\"\n", key: "load.timeout", at: "timeout", want: "too long: a duration is at most"},
	{name: "bool for a duration", src: appT + deployT + "[load]\nrate = 100\nduration = true\n", key: "load.duration", at: "duration", want: "must be a string, got true"},
	{name: "cooldown without a unit", src: okSpec + "[experiment]\ncooldown = 2\n", key: "experiment.cooldown", at: "cooldown", want: `needs a unit, e.g. "2s"`},
	{name: "experiment warmup string without a unit", src: okSpec + "[experiment]\nwarmup = \"3\"\n", key: "experiment.warmup", at: "warmup", want: `needs a unit, e.g. "3s"`},
	{name: "duration in the second stage", src: stagesSpec("type = \"ramp\"\nduration = 5"), key: "load.stages[1].duration", at: "duration = 5", want: `needs a unit, e.g. "5s"`},
	{name: "negative duration in the second stage", src: stagesSpec("type = \"ramp\"\nduration = \"-1s\""), key: "load.stages[1].duration", at: "-1s", want: "must not be negative"},
	{name: "duration without a unit by flag", src: okSpec, sets: []string{"load.duration=6"}, key: "load.duration", flag: "--set load.duration=6", want: `needs a unit, e.g. "6s"`},
	{name: "start_timeout by flag", src: okSpec, sets: []string{"deploy.start_timeout=5"}, key: "deploy.start_timeout", flag: "--set deploy.start_timeout=5", want: `needs a unit`},
	{name: "plan longer than time can count", src: appT + deployT + "[load]\nrate = 100\nduration = \"2000000h\"\n[experiment]\nrepetitions = 2\n", key: "load.duration", at: "2000000h", want: "more than 292 years"},
	{name: "experiment duration longer than time can count", src: okSpec + "[experiment]\nrepetitions = 3\nduration = \"1000000h\"\n", key: "experiment.duration", at: "1000000h", want: "3 runs of warm-up"},
	{name: "durations that differ between points", src: okSpec + "[experiment.factors]\n\"load.warmup\" = [\"1s\", \"2s\"]\n", key: "experiment.factors", at: "[experiment.factors]", want: "every run must have the same warm-up and duration, but load.warmup=2s has 2s and 2s where load.warmup=1s has 1s and 2s"},

	// Empty and unknown names.
	{name: "empty transport", src: appT + "[deploy]\ntransport = \"\"\n" + loadT, key: "deploy.transport", at: "transport", want: `must not be empty: write one of inproc, grpc, http, netrpc, protorpc, or leave the key out for "grpc"`},
	{name: "empty transport by flag", src: okSpec, sets: []string{"deploy.transport="}, key: "deploy.transport", flag: "--set deploy.transport=", want: "must not be empty"},
	{name: "empty transport as a level", src: okSpec + "[experiment.factors]\n\"deploy.transport\" = [\"\", \"grpc\"]\n", key: "deploy.transport", at: `"deploy.transport"`, want: "must not be empty"},
	{name: "empty placement", src: appT + "[deploy]\nplacement = \"\"\n" + loadT, key: "deploy.placement", at: "placement", want: `must not be empty: name a placement, or leave the key out for "monolith"`},
	{name: "empty network", src: appT + "[deploy]\nnetwork = \"\"\n" + loadT, key: "deploy.network", at: "network", want: `must be "tcp" or "unix", got ""`},
	{name: "unknown network", src: appT + "[deploy]\nnetwork = \"udp\"\n" + loadT, key: "deploy.network", at: "udp", want: `got "udp"`},
	{name: "empty deployer", src: appT + "[deploy]\ndeployer = \"\"\n" + loadT, key: "deploy.deployer", at: "deployer", want: `unknown deployer ""`},
	{name: "unknown deployer", src: appT + "[deploy]\ndeployer = \"swarm\"\n" + loadT, key: "deploy.deployer", at: "swarm", want: `unknown deployer "swarm"`},
	{name: "empty design", src: okSpec + "[experiment]\ndesign = \"\"\n", key: "experiment.design", at: "design", want: `must be "full" or "fractional", got ""`},
	{name: "empty order", src: okSpec + "[experiment]\norder = \"\"\n", key: "experiment.order", at: "order", want: `got ""`},
	{name: "empty response", src: okSpec + "[experiment]\nresponse = \"\"\n", key: "experiment.response", at: "response", want: `unknown metric ""`},
	{name: "unknown design", src: okSpec + "[experiment]\ndesign = \"half\"\n", key: "experiment.design", at: "half", want: `got "half"`},
	{name: "unknown order", src: okSpec + "[experiment]\norder = \"shuffled\"\n", key: "experiment.order", at: "shuffled", want: `got "shuffled"`},
	{name: "unknown response", src: okSpec + "[experiment]\nresponse = \"p42\"\n", key: "experiment.response", at: "p42", want: "unknown metric"},
	{name: "unknown transport", src: appT + "[deploy]\ntransport = \"quic\"\n" + loadT, key: "deploy.transport", at: "quic", want: `unknown transport "quic" (known: inproc, grpc, http, netrpc, protorpc)`},
	{name: "unknown placement", src: appT + "[deploy]\nplacement = \"nowhere\"\n" + loadT, key: "deploy.placement", at: "nowhere", want: "unknown placement"},
	{name: "unknown payload", src: appT + "payload = \"medium\"\n" + deployT + loadT, key: "app.payload", at: "medium", want: `must be "small" or "large"`},
	{name: "unknown app", src: "[app]\nname = \"chian\"\n" + deployT + loadT, key: "app.name", at: "chian", want: "chian"},
	{name: "unknown arrival", src: okSpec + "arrival = \"bursty\"\n", key: "load.arrival", at: "bursty", want: `must be "constant" or "poisson"`},
	{name: "unknown protocol", src: okSpec + "protocol = \"quic\"\n", key: "load.protocol", at: "quic", want: `must be "http", "h2c" or "grpc"`},
	{name: "unknown stage type", src: stagesSpec("type = \"jump\"\nduration = \"1s\""), key: "load.stages[1].type", at: "jump", want: `must be "ramp" or "step"`},
	{name: "long unknown transport is cut", src: appT + "[deploy]\ntransport = \"" + strings.Repeat("q", 10000) + "\"\n" + loadT, key: "deploy.transport", at: "transport", want: `"` + strings.Repeat("q", spec.EchoLimit) + `"… (10000 characters) (known:`},
	{name: "long value by flag is cut", src: okSpec, sets: []string{"deploy.network=" + strings.Repeat("u", 500)}, key: "deploy.network", flag: "--set deploy.network=" + strings.Repeat("u", spec.EchoLimit) + "… (500 characters)", want: `got "` + strings.Repeat("u", spec.EchoLimit) + `"… (500 characters)`},

	// Placements.
	{name: "monolith redefined", src: appT + deployT + "[deploy.placements]\nmonolith = [[\"hop1\"], [\"hop2\", \"hop3\"]]\n" + loadT, key: "deploy.placements.monolith", at: "monolith =", want: `"monolith" is a built-in placement and cannot be redefined`},
	{name: "split redefined", src: appT + "[deploy]\nplacement = \"split\"\n[deploy.placements]\nsplit = [[\"hop1\", \"hop2\", \"hop3\"]]\n" + loadT, key: "deploy.placements.split", at: "split = ", want: "built-in placement"},
	{name: "unknown component", src: appT + "[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"hop1\", \"hop2\", \"hop3\", \"hop4\"]]\n" + loadT, key: "deploy.placements.p", at: "hop4", want: `unknown component "hop4"`},
	{name: "component placed twice", src: appT + "[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"hop1\", \"hop2\"], [\"hop2\", \"hop3\"]]\n" + loadT, key: "deploy.placements.p", at: "p = ", want: `component "hop2" is placed twice`},
	{name: "component not placed", src: appT + "[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"hop1\", \"hop2\"]]\n" + loadT, key: "deploy.placements.p", at: "p = ", want: "hop3 not placed"},
	{name: "empty group", src: appT + "[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"hop1\", \"hop2\", \"hop3\"], []]\n" + loadT, key: "deploy.placements.p", at: "p = ", want: "group 2 of placement \"p\" is empty"},
	{name: "no groups", src: appT + "[deploy]\nplacement = \"p\"\n[deploy.placements]\np = []\n" + loadT, key: "deploy.placements.p", at: "p = ", want: "has no groups"},
	{name: "inproc across processes", src: appT + "[deploy]\ntransport = \"inproc\"\nplacement = \"split\"\n" + loadT, key: "deploy.transport", at: "inproc", want: "cannot cross processes"},
	{name: "inproc with a network", src: appT + "[deploy]\ntransport = \"inproc\"\nnetwork = \"tcp\"\n" + loadT, key: "deploy.network", at: "network", want: "has no network"},
	{name: "monolith redefined by flag", src: okSpec, sets: []string{`deploy.placements.monolith=[["hop1"], ["hop2", "hop3"]]`}, key: "deploy.placements.monolith", flag: `--set deploy.placements.monolith=[["hop1"], ["hop2", "hop3"]]`, want: "built-in placement"},

	// The design.
	{name: "one level", src: okSpec + "[experiment.factors]\n\"load.rate\" = [1]\n", key: `experiment.factors."load.rate"`, at: `"load.rate"`, want: "at least two levels, got 1"},
	{name: "levels not a list", src: okSpec + "[experiment.factors]\n\"load.rate\" = 5\n", key: `experiment.factors."load.rate"`, at: `"load.rate"`, want: "levels must be a list"},
	{name: "level twice", src: okSpec + "[experiment.factors]\n\"load.rate\" = [1, 2, 1]\n", key: `experiment.factors."load.rate"`, at: `"load.rate"`, want: "level 1 is listed twice"},
	{name: "factor outside the varied tables", src: okSpec + "[experiment.factors]\n\"experiment.seed\" = [1, 2]\n", key: `experiment.factors."experiment.seed"`, at: `"experiment.seed"`, want: "a factor must be a key of [app], [deploy] or [load]"},
	{name: "factor through a value", src: okSpec + "[experiment.factors]\n\"load.rate.x\" = [1, 2]\n", key: `experiment.factors."load.rate.x"`, at: `"load.rate.x"`, want: "load.rate is not a table"},
	{name: "too many factors", src: okSpec + factorsOf(27, 2), key: "experiment.factors", at: "[experiment.factors]", want: "at most 26 factors, got 27"},
	{name: "fractional without generators", src: okSpec + "[experiment]\ndesign = \"fractional\"\n", key: "experiment.design", at: "design", want: "needs [experiment.generators]"},
	{name: "generators in a full design", src: okSpec + "[experiment]\n" + factorsOf(3, 2) + "[experiment.generators]\nC = \"AB\"\n", key: "experiment.generators", at: "[experiment.generators]", want: `generators need design = "fractional"`},
	{name: "generator of no factor", src: okSpec + "[experiment]\ndesign = \"fractional\"\n" + factorsOf(2, 2) + "[experiment.generators]\nD = \"AB\"\n", key: "experiment.generators.D", at: "D = ", want: "no factor has letter D"},
	{name: "generator of itself", src: okSpec + "[experiment]\ndesign = \"fractional\"\n" + factorsOf(2, 2) + "[experiment.generators]\nB = \"AB\"\n", key: "experiment.generators.B", at: "B = ", want: `letter B in "AB" is not another factor`},
	{name: "generator word in lower case", src: okSpec + "[experiment]\ndesign = \"fractional\"\n" + factorsOf(3, 2) + "[experiment.generators]\nC = \"ab\"\n", key: "experiment.generators.C", at: "C = ", want: "must be a word of factor letters"},
	{name: "generator named by two letters", src: okSpec + "[experiment]\ndesign = \"fractional\"\n" + factorsOf(3, 2) + "[experiment.generators]\nCC = \"AB\"\n", key: "experiment.generators.CC", at: "CC", want: "named by one factor letter"},
	{name: "generator of a generated factor", src: okSpec + "[experiment]\ndesign = \"fractional\"\n" + factorsOf(4, 2) + "[experiment.generators]\nC = \"AB\"\nD = \"AC\"\n", key: "experiment.generators.D", at: "D = ", want: "C is itself generated"},
	{name: "fractional with three levels", src: okSpec + "[experiment]\ndesign = \"fractional\"\n[experiment.factors]\n\"app.a\" = [1, 2]\n\"app.b\" = [1, 2]\n\"app.c\" = [1, 2, 3]\n[experiment.generators]\nC = \"AB\"\n", key: `experiment.factors."app.c"`, at: `"app.c"`, want: "two levels per factor, got 3"},
	{name: "too many generators", src: okSpec + "[experiment]\ndesign = \"fractional\"\nmax_runs = 100000\n" + factorsOf(14, 2) + "[experiment.generators]\nC=\"AB\"\nD=\"AB\"\nE=\"AB\"\nF=\"AB\"\nG=\"AB\"\nH=\"AB\"\nI=\"AB\"\nJ=\"AB\"\nK=\"AB\"\nL=\"AB\"\nM=\"AB\"\nN=\"AB\"\n", key: "experiment.generators", at: "[experiment.generators]", want: "at most 11 generators, got 12"},
	{name: "no repetitions", src: okSpec + "[experiment]\nrepetitions = 0\n", key: "experiment.repetitions", at: "repetitions", want: "must be between 1 and 10000, got 0"},
	{name: "too many repetitions", src: okSpec + "[experiment]\nrepetitions = 10001\n", key: "experiment.repetitions", at: "repetitions", want: "got 10001"},
	{name: "name with a slash", src: okSpec + "[experiment]\nname = \"a/b\"\n", key: "experiment.name", at: "a/b", want: "it names a directory"},
	{name: "repetitions by flag", src: okSpec, sets: []string{"experiment.repetitions=0"}, key: "experiment.repetitions", flag: "--set experiment.repetitions=0", want: "must be between 1 and 10000"},
	{name: "one level by flag", src: okSpec, sets: []string{`experiment.factors."load.rate"=[1]`}, key: `experiment.factors."load.rate"`, flag: `--set experiment.factors."load.rate"=[1]`, want: "at least two levels"},
	{name: "level of a factor set by flag", src: okSpec, sets: []string{`experiment.factors."load.rate"=[1, "x"]`}, key: "load.rate", flag: `--set experiment.factors."load.rate"=[1, "x"]`, want: `must be a number, got "x"`},

	// Bounded plans.
	{name: "twenty two-level factors", src: okSpec + factorsOf(20, 2), key: "experiment.factors", at: "[experiment.factors]", want: "1048576 runs (1048576 design points × 1 repetition) are more than experiment.max_runs = 10000; use a fractional design"},
	{name: "three factors of a hundred levels", src: okSpec + factorsOf(3, 100), key: "experiment.factors", at: "[experiment.factors]", want: "levels of app.f0 (100) × app.f1 (100) × app.f2 (100)"},
	{name: "repetitions past the cap", src: okSpec + "[experiment]\nrepetitions = 10000\n" + factorsOf(1, 2), key: "experiment.factors", at: "[experiment.factors]", want: "20000 runs (2 design points × 10000 repetitions)"},
	{name: "a lowered cap", src: okSpec + "[experiment]\nmax_runs = 3\n" + factorsOf(2, 2), key: "experiment.factors", at: "[experiment.factors]", want: "more than experiment.max_runs = 3"},
	{name: "a fractional design past the cap", src: okSpec + "[experiment]\ndesign = \"fractional\"\n" + factorsOf(16, 2) + "[experiment.generators]\nP = \"ABC\"\nO = \"ABD\"\n", key: "experiment.factors", at: "[experiment.factors]", want: "design points: 2^(16-2)"},
	{name: "repetitions alone past the cap", src: okSpec + "[experiment]\nmax_runs = 10\nrepetitions = 50\n", key: "experiment.repetitions", at: "repetitions", want: "50 runs"},
	{name: "a count past 64 bits", src: okSpec + "[experiment]\nmax_runs = 1000000\n" + factorsOf(26, 10), key: "experiment.factors", at: "[experiment.factors]", want: "100000000000000000000000000 runs"},
	{name: "cap of zero", src: okSpec + "[experiment]\nmax_runs = 0\n", key: "experiment.max_runs", at: "max_runs", want: "must be between 1 and 1000000, got 0"},
	{name: "cap past its own bound", src: okSpec + "[experiment]\nmax_runs = 1000001\n", key: "experiment.max_runs", at: "max_runs", want: "got 1000001"},
	{name: "cap lowered by flag", src: okSpec + factorsOf(2, 2), sets: []string{"experiment.max_runs=2"}, key: "experiment.factors", at: "[experiment.factors]", want: "4 runs"},
	{name: "cap raised by flag past its bound", src: okSpec + factorsOf(20, 2), sets: []string{"experiment.max_runs=2000000"}, key: "experiment.max_runs", flag: "--set experiment.max_runs=2000000", want: "must be between 1 and 1000000"},
	{name: "set without a value", src: okSpec, sets: []string{"load.rate"}, flag: `--set "load.rate"`, want: "write key=value"},
	{name: "set of a bare table name", src: okSpec, sets: []string{"rate=5"}, flag: `--set "rate=5"`, want: "name a key inside a table"},
	{name: "factors by flag past the cap", src: okSpec + "[experiment]\nmax_runs = 5\n", sets: []string{`experiment.factors."load.rate"=[1, 2, 3, 4, 5, 6]`}, key: `experiment.factors."load.rate"`, flag: `--set experiment.factors."load.rate"=[1, 2, 3, 4, 5, 6]`, want: "6 runs"},

	// The load generator's own checks, located by the spec.
	{name: "negative rate", src: appT + deployT + "[load]\nrate = -5\n", key: "load.rate", at: "-5", want: "must be > 0"},
	{name: "users in an open loop", src: okSpec + "users = 3\n", key: "load.users", at: "users", want: `applies to mode "closed" only`},
	{name: "think_max below think_min", src: appT + deployT + "[load]\nmode = \"closed\"\nusers = 2\nthink_min = \"2s\"\nthink_max = \"1s\"\n", key: "load.think_max", at: "think_max", want: "must be >= think_min"},
	{name: "think time without a unit", src: appT + deployT + "[load]\nmode = \"closed\"\nusers = 2\nthink_time = 100\n", key: "load.think_time", at: "think_time", want: `needs a unit, e.g. "100s"`},
	{name: "target not http", src: okSpec + "target = \"ftp://x\"\n", key: "load.target", at: "ftp", want: "want an http:// URL"},
	{name: "negative max_inflight", src: okSpec + "max_inflight = -1\n", key: "load.max_inflight", at: "max_inflight", want: "must be >= 0"},
	{name: "negative connections", src: okSpec + "connections = -1\n", key: "load.connections", at: "connections", want: "must be >= 0"},
	{name: "request and flow", src: okSpec + "[load.request]\npath = \"/\"\n[load.flow]\n[[load.flow.steps]]\npath = \"/\"\n", key: "load.flow", at: "[load.flow]", want: "not both"},
	{name: "stage users in an open loop", src: stagesSpec("type = \"step\"\nduration = \"1s\"\nusers = 3"), key: "load.stages[1].users", at: "users", want: `applies to mode "closed" only`},
	{name: "unknown mode", src: okSpec + "mode = \"half-open\"\n", key: "load.mode", at: "half-open", want: `must be "open" or "closed"`},
}

// TestBadSpecs runs every bad spec through the path `svclab plan` takes
// (parse with --set overrides, PlanRun) and checks that it is refused with the right
// words, at the right key and line or flag.
func TestBadSpecs(t *testing.T) {
	if len(badSpecs) < 100 {
		t.Errorf("the corpus has %d bad specs; keep at least 100", len(badSpecs))
	}
	names := map[string]bool{}
	for _, tc := range badSpecs {
		if names[tc.name] {
			t.Errorf("two cases named %q", tc.name)
		}
		names[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			wantLine := 0
			if tc.flag == "" {
				if strings.Count(tc.src, tc.at) != 1 {
					t.Fatalf("at %q appears %d times in the spec; make it unique", tc.at, strings.Count(tc.src, tc.at))
				}
				wantLine = strings.Count(tc.src[:strings.Index(tc.src, tc.at)], "\n") + 1
			}
			err := planText(t, tc.src, tc.sets)
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tc.want)
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %q is a %T, not a *spec.Error", err, err)
			}
			if se.Key != tc.key || se.Line != wantLine || se.Flag != tc.flag || !strings.Contains(se.Error(), tc.want) {
				t.Errorf("error %.400q\n(key %q line %d flag %q)\nwant key %q line %d flag %q containing %.300q",
					se.Error(), se.Key, se.Line, se.Flag, tc.key, wantLine, tc.flag, tc.want)
			}
			if tc.flag == "" && !strings.HasPrefix(se.Error(), fmt.Sprintf("bad.toml:%d: ", wantLine)) {
				t.Errorf("error %.200q does not start with file:line", se.Error())
			}
		})
	}
}

// planText parses src, applies sets and plans it, within a time limit:
// no input may make planning hang.
func planText(t *testing.T, src string, sets []string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := spec.Parse("bad.toml", []byte(src), sets...)
	if err != nil {
		return err
	}
	_, _, err = PlanRun(ctx, s, 1)
	if ctx.Err() != nil {
		t.Fatalf("planning took longer than 20s: %v", err)
	}
	return err
}

// TestGoodSpecsStillPlan guards the corpus from the other side: the parts
// it is made from, and the fixes it suggests, are accepted.
func TestGoodSpecsStillPlan(t *testing.T) {
	sets := map[string][]string{"a cap raised by flag": {"experiment.max_runs=15000"}}
	for name, src := range map[string]string{
		"the base":                okSpec,
		"byte-order mark":         "\uFEFF" + okSpec,
		"zero duration":           okSpec + "warmup = 0\n",
		"a renamed placement":     appT + "[deploy]\nplacement = \"edge\"\n[deploy.placements]\nedge = [[\"hop1\"], [\"hop2\", \"hop3\"]]\n" + loadT,
		"stages":                  stagesSpec("type = \"step\"\nduration = \"2s\"\nrate = 5"),
		"a cap raised by flag":    okSpec + "[experiment.factors]\n\"load.rate\" = [" + levelsUpTo(100) + "]\n\"load.max_inflight\" = [" + levelsUpTo(150) + "]\n",
		"a design at the cap":     okSpec + "[experiment]\nmax_runs = 16\n" + "[experiment.factors]\n\"load.rate\" = [1, 2, 3, 4]\n\"app.hops\" = [1, 2, 3, 4]\n",
		"a fractional design":     okSpec + "[experiment]\ndesign = \"fractional\"\n[experiment.factors]\n\"load.rate\" = [1, 2]\n\"app.hops\" = [1, 2]\n\"deploy.transport\" = [\"grpc\", \"http\"]\n[experiment.generators]\nC = \"AB\"\n",
		"non-ASCII quoted header": okSpec + "[load.request]\npath = \"/\"\nheaders = {\"x-näme\" = \"wert\"}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := planText(t, src, sets[name]); err != nil {
				t.Errorf("refused: %v", err)
			}
		})
	}
}

// TestPlanningStopsWithContext: a design at a high cap takes a while to
// check point by point; cancelling stops it at once, as Ctrl-C must.
func TestPlanningStopsWithContext(t *testing.T) {
	src := okSpec + "[experiment]\nmax_runs = 1000000\n[experiment.factors]\n"
	for _, key := range []string{"load.rate", "load.max_inflight", "load.connections"} {
		src += fmt.Sprintf("%q = [%s]\n", key, levelsUpTo(100))
	}
	s, err := spec.Parse("big.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, _, err = PlanRun(ctx, s, 1)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "planning stopped") {
		t.Fatalf("PlanRun = %v, want it stopped by the context", err)
	}
	if took > 2*time.Second {
		t.Errorf("planning stopped %v after being started, 200ms after which it was cancelled", took)
	}
}
