package load

import (
	"math"
	"strings"
	"testing"
	"time"
)

// fuzzLimit is how long one input may take to decode and validate; an
// input that takes longer hangs svclab as surely as a panic crashes it.
const fuzzLimit = 2 * time.Second

// FuzzLoadTable drives arbitrary text through the [load] table's path in
// a spec (parse, strict decode, Validate) and checks that nothing panics
// or hangs, and that whatever is accepted is something the generator can
// run: finite numbers within its limits, a window that fits in a
// time.Duration. Seeds are the shapes docs/LOAD.md shows and the mistakes
// TestConfigFromSpec refuses; inputs once found to fail live under
// testdata/fuzz/FuzzLoadTable.
func FuzzLoadTable(f *testing.F) {
	for _, s := range []string{
		"rate = 100\nduration = \"10s\"",
		"[load]\nmode = \"closed\"\nusers = 20\nthink_min = \"100ms\"\nthink_max = \"500ms\"\n[[load.stages]]\ntype = \"ramp\"\nduration = \"10s\"\nusers = 40",
		"[load]\nrate = 5\n[load.flow]\nname = \"checkout\"\n[[load.flow.steps]]\nmethod = \"POST\"\npath = \"/login\"\nextract = { token = \"json:token\" }\n[[load.flow.steps]]\npath = \"/cart/{{token}}\"",
		"[load]\nrate = 1\ntarget = \"http://127.0.0.1:9/cart\"\n[load.thresholds]\np99_ms = 50\nerror_rate = 0.01\n[load.thresholds.operations.\"GET /cart\"]\np99_ms = 20",
		"protocol = \"grpc\"\nrate = 1\ntarget = \"127.0.0.1:9000\"\n[request]\nmethod = \"svclab.echo.Echo/Echo\"",
		"rate = nan", "rate = inf", "rate = 1e12", "mode = \"\"", "duration = 6", "target = \"http://127.0.0.1:99999/\"",
		"[[load.stages]]\ntype = \"step\"\nduration = \"2000000h\"\nrate = 1\n[[load.stages]]\ntype = \"step\"\nduration = \"2000000h\"\nrate = 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		type result struct {
			c   Config
			err error
		}
		done := make(chan result, 1)
		go func() {
			c, err := decodeSpec(text)
			if err == nil {
				c.opNames()
				c.MeasureDuration()
			}
			done <- result{c, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(fuzzLimit):
			t.Fatalf("decoding and validating took more than %v: %q", fuzzLimit, text)
		}
		if r.err != nil {
			if strings.TrimSpace(r.err.Error()) == "" {
				t.Fatalf("an empty error for %q", text)
			}
			return
		}
		c := r.c
		for _, v := range []float64{c.Rate, c.SpawnRate} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("accepted a meaningless number %v in %+v", v, c)
			}
		}
		if c.Rate > MaxRate || c.Users > MaxUsers || c.Connections > MaxConnections || c.MaxInflight > MaxInflightLimit {
			t.Fatalf("accepted a value past the generator's limits: %+v", c)
		}
		for _, s := range c.Stages {
			if math.IsNaN(s.Rate) || s.Rate > MaxRate || s.Duration <= 0 {
				t.Fatalf("accepted stage %+v", s)
			}
		}
		if c.Warmup < 0 || c.MeasureDuration() <= 0 || c.Warmup.D() > time.Duration(math.MaxInt64)-c.MeasureDuration() {
			t.Fatalf("accepted a window that does not fit: warm-up %v, measurement %v", c.Warmup, c.MeasureDuration())
		}
	})
}
