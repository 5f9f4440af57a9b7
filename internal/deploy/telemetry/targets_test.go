package telemetry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestWriteTargets: the targets file is what Prometheus's file_sd reads,
// one group per replica labelled with its process name, rewritten whole
// on every change, and the count every readiness check expects follows it.
func TestWriteTargets(t *testing.T) {
	p := &prometheus{dir: t.TempDir()}
	for _, targets := range [][]Target{
		{{Addr: "127.0.0.1:1", Process: "a#0"}, {Addr: "127.0.0.1:2", Process: "b#0"}},
		{{Addr: "127.0.0.1:2", Process: "b#0"}},
		{},
	} {
		if err := p.writeTargets(targets); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(p.dir, targetsFile))
		if err != nil {
			t.Fatal(err)
		}
		var got []fileSDGroup
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		want := []fileSDGroup{}
		for _, tg := range targets {
			want = append(want, fileSDGroup{Targets: []string{tg.Addr}, Labels: map[string]string{"process": tg.Process}})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("file %s, want %+v", b, want)
		}
		if n := p.targets.Load(); n != int64(len(targets)) {
			t.Errorf("%d targets expected, want %d", n, len(targets))
		}
		if _, err := os.Stat(filepath.Join(p.dir, targetsFile+".tmp")); !os.IsNotExist(err) {
			t.Errorf("temporary file left: %v", err)
		}
	}
}

// TestWriteTargetsPath: a target's path, query parameters and labels
// are the labels through which file_sd tells Prometheus how to scrape it
// (__metrics_path__, __param_<name>) and what to add to its series.
func TestWriteTargetsPath(t *testing.T) {
	p := &prometheus{dir: t.TempDir()}
	tg := Target{Addr: "127.0.0.1:1", Process: "web#1.envoy", Path: EnvoyStatsPath, Params: map[string]string{"usedonly": "true"}, Labels: map[string]string{"group": "web"}}
	if err := p.writeTargets([]Target{tg}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(p.dir, targetsFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []fileSDGroup
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := []fileSDGroup{{Targets: []string{tg.Addr}, Labels: map[string]string{
		"process": "web#1.envoy", "group": "web", "__metrics_path__": "/stats/prometheus", "__param_usedonly": "true",
	}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("file %s, want %+v", b, want)
	}
}

// TestNoTelemetry: a deployment without telemetry (a nil *Telemetry) says
// so when asked for spans or series, and its other methods do nothing.
func TestNoTelemetry(t *testing.T) {
	var tel *Telemetry
	if _, err := tel.Spans(); err != ErrNoTracing {
		t.Errorf("Spans: %v, want %v", err, ErrNoTracing)
	}
	if _, err := tel.Series(); err != ErrNoMetrics {
		t.Errorf("Series: %v, want %v", err, ErrNoMetrics)
	}
	if err := tel.SetTargets([]Target{{Addr: "x"}}); err != nil {
		t.Error(err)
	}
	if err := tel.Stop(t.Context(), nil); err != nil {
		t.Error(err)
	}
	if got := tel.Processes(); got != nil {
		t.Errorf("Processes: %v", got)
	}
}
