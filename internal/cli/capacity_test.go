package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/capacity"
)

// TestCapacityPrepare: what the search takes from the spec, checked
// without deploying anything.
func TestCapacityPrepare(t *testing.T) {
	t.Parallel()
	const app = "[app]\nname = \"chain\"\nhops = 1\n"
	for _, tc := range []struct {
		name    string
		spec    string
		slos    []string
		start   float64 // --start, 0 when not given
		want    float64 // the start rate
		wantP99 float64
		note    string
	}{
		{"the spec's rate", app + "[load]\nrate = 123\n", []string{"p99_ms=50"}, 0, 123, 50, ""},
		{"--start wins", app + "[load]\nrate = 123\n", []string{"p99_ms=50"}, 7, 7, 50, ""},
		{"a closed loop", app + "[load]\nmode = \"closed\"\nusers = 4\n", []string{"p99_ms=50"}, 0, 50, 50, ""},
		{"stages", app + "[load]\n[[load.stages]]\ntype = \"ramp\"\nduration = \"5s\"\nrate = 100\n", []string{"p99_ms=50"}, 0, 50, 50, ""},
		{"no rate", app, []string{"p99_ms=50"}, 0, 50, 50, ""},
		{"the spec's SLO", app + "[load.thresholds]\np99_ms = 30\n", nil, 0, 50, 30, ""},
		{"--slo overrides the spec's", app + "[load.thresholds]\np99_ms = 30\n", []string{"p99_ms=40"}, 0, 50, 40, ""},
		{"factors", app + "[experiment.factors]\n\"deploy.transport\" = [\"grpc\", \"http\"]\n", []string{"p99_ms=50"}, 0, 50, 50, "1 factor(s) are not expanded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.toml")
			if err := os.WriteFile(path, []byte(tc.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			o := &capacityOptions{slos: tc.slos, step: time.Second, settings: capacitySettingsFlags()}
			o.settings.Start = tc.start
			pr, notes, err := o.prepare(path, tc.start != 0)
			if err != nil {
				t.Fatal(err)
			}
			if o.settings.Start != tc.want {
				t.Errorf("start %v, want %v", o.settings.Start, tc.want)
			}
			if p := pr.Load.Thresholds.P99Ms; p == nil || *p != tc.wantP99 {
				t.Errorf("p99_ms %v, want %v", p, tc.wantP99)
			}
			if got := strings.Join(notes, "\n"); !strings.Contains(got, tc.note) || (tc.note == "") != (got == "") {
				t.Errorf("notes %q, want %q", got, tc.note)
			}
		})
	}
}

// capacitySettingsFlags are the settings as the flags default them.
func capacitySettingsFlags() capacity.Settings {
	c := newCapacityCmd()
	f := c.Flags()
	growth, _ := f.GetFloat64("growth")
	precision, _ := f.GetFloat64("precision")
	confirm, _ := f.GetInt("confirm")
	retry, _ := f.GetInt("retry")
	return capacity.Settings{Growth: growth, Precision: precision, Confirm: confirm, Retry: retry}
}
