package experiment

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
)

// TestStreamFansOut: every subscriber gets every event in the order it
// was published, until it unsubscribes; a nil stream drops events.
func TestStreamFansOut(t *testing.T) {
	s := NewStream()
	var a, b []string
	s.Subscribe(func(e Event) { a = append(a, e.(RunState).State) })
	stopB := s.Subscribe(func(e Event) { b = append(b, e.(RunState).State) })
	s.Publish(RunState{Run: "r1", State: "deploying"})
	s.Publish(RunState{Run: "r1", State: "warm-up"})
	stopB()
	s.Publish(RunState{Run: "r1", State: "ok"})
	if !slices.Equal(a, []string{"deploying", "warm-up", "ok"}) || !slices.Equal(b, []string{"deploying", "warm-up"}) {
		t.Errorf("subscribers saw %v and %v", a, b)
	}
	var none *Stream
	none.Publish(RunState{}) // must not panic
}

// scaled is a deployment whose autoscaler has made the decisions in
// events so far.
type scaled struct {
	deploy.Deployment
	topo *runtime.Topology
	caps deploy.Capabilities

	mu     sync.Mutex
	events []deploy.ScaleEvent
}

func (d *scaled) Topology() *runtime.Topology       { return d.topo }
func (d *scaled) Processes() []deploy.Process       { return nil }
func (d *scaled) Capabilities() deploy.Capabilities { return d.caps }
func (d *scaled) ScaleEvents() []deploy.ScaleEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.events)
}
func (d *scaled) Spans() ([]deploy.Span, error)    { return nil, nil }
func (d *scaled) Series() ([]deploy.Sample, error) { return nil, nil }

// TestRecordersFromCapabilities: a run's recorders are chosen from what
// the deployment can do and what the topology asks of it.
func TestRecordersFromCapabilities(t *testing.T) {
	auto := &runtime.Topology{Groups: []runtime.Group{{Name: "hop1", Autoscale: &runtime.Autoscale{}}}}
	plainTopo := &runtime.Topology{Groups: []runtime.Group{{Name: "hop1"}}}
	traced := &runtime.Topology{Groups: []runtime.Group{{Name: "hop1"}}, Mesh: runtime.Mesh{Tracing: 1, Metrics: true}}
	for _, tc := range []struct {
		name string
		topo *runtime.Topology
		caps func(*scaled) deploy.Capabilities
		want []string
	}{
		{"autoscaled", auto, func(d *scaled) deploy.Capabilities { return deploy.Capabilities{Scaling: d} }, []string{"load", "resource", "scaling"}},
		{"autoscaled, cannot say", auto, func(*scaled) deploy.Capabilities { return deploy.Capabilities{} }, []string{"load", "resource"}},
		{"no autoscaler", plainTopo, func(d *scaled) deploy.Capabilities { return deploy.Capabilities{Scaling: d, Traces: d, Metrics: d} }, []string{"load", "resource"}},
		{"tracing and metrics", traced, func(d *scaled) deploy.Capabilities { return deploy.Capabilities{Traces: d, Metrics: d} }, []string{"load", "resource", "trace", "metric"}},
	} {
		d := &scaled{topo: tc.topo}
		d.caps = tc.caps(d)
		rec := &Recording{Deployment: d, Prepared: &Prepared{Runtime: tc.topo}, File: &RunFile{}}
		var got []string
		for _, newRec := range recorders {
			if r := newRec(rec); r != nil {
				got = append(got, kindOf(r))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: recorders %v, want %v", tc.name, got, tc.want)
		}
	}
}

// kindOf names a recorder by its type: "scaling" for *scalingRecorder.
func kindOf(r Recorder) string {
	n := reflect.TypeOf(r).Elem().Name()
	return n[:len(n)-len("Recorder")]
}

// TestScalingRecorder: each decision reaches the stream once, as it is
// made, and all of them scaling.parquet, timed from the measurement's
// start.
func TestScalingRecorder(t *testing.T) {
	t0 := time.Now()
	d := &scaled{topo: &runtime.Topology{Groups: []runtime.Group{{Name: "hop1", Autoscale: &runtime.Autoscale{}}}}}
	d.caps = deploy.Capabilities{Scaling: d}
	d.events = []deploy.ScaleEvent{{Time: t0, Group: "hop1", Metric: "cpu", Current: 1, Desired: 2}}
	events := NewStream()
	var seen []int
	events.Subscribe(func(e Event) {
		if sd, ok := e.(ScaleDecision); ok && sd.Run == "r1" {
			seen = append(seen, sd.Desired)
		}
	})
	rec := &Recording{Run: "r1", Deployment: d, Prepared: &Prepared{Runtime: d.topo}, Events: events, File: &RunFile{}}
	r := newScalingRecorder(rec).(*scalingRecorder)
	r.publish(rec)
	d.mu.Lock()
	d.events = append(d.events, deploy.ScaleEvent{Time: t0.Add(2 * time.Second), Group: "hop1", Metric: "cpu", Current: 2, Desired: 3})
	d.mu.Unlock()
	r.publish(rec)
	r.publish(rec)
	if !slices.Equal(seen, []int{2, 3}) {
		t.Errorf("the stream saw decisions to %v, want 2 then 3, once each", seen)
	}
	dir := t.TempDir()
	if _, err := r.Finish(&Ended{Dir: dir, MeasureStart: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[ScalingRow](filepath.Join(dir, ScalingFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].TS != -1 || rows[1].TS != 1 || rows[1].Desired != 3 {
		t.Errorf("rows %+v", rows)
	}
}

// TestResourceRecorderPublishes: each sample the resource recorder reads
// reaches the stream as it is read, with its process, and the rows of
// resources.parquet are the same samples.
func TestResourceRecorderPublishes(t *testing.T) {
	d := &scaled{topo: &runtime.Topology{}}
	events := NewStream()
	got := make(chan ResourceSample, 16)
	events.Subscribe(func(e Event) {
		if s, ok := e.(ResourceSample); ok {
			select {
			case got <- s:
			default:
			}
		}
	})
	file := &RunFile{}
	rec := &Recording{Run: "r1", Deployment: d, Prepared: &Prepared{Runtime: d.topo}, Events: events, File: file, gens: newGenerators(nil)}
	r := newResourceRecorder(rec)
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx, rec); err != nil {
		t.Fatal(err)
	}
	var s ResourceSample
	select {
	case s = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no resource sample on the stream")
	}
	cancel()
	if s.Run != "r1" || s.Process.Name != "loadgen" || s.Usage.CPUSeconds <= 0 {
		t.Errorf("sample %+v, want the load generator's", s)
	}
	dir := t.TempDir()
	if _, err := r.Finish(&Ended{Dir: dir, MeasureStart: s.At}); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[ResourceRow](filepath.Join(dir, ResourcesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || rows[0].Process != "loadgen" || rows[0].TS != 0 || rows[0].CPUS != s.Usage.CPUSeconds {
		t.Errorf("rows %+v, want the sample on the stream first, at t_s 0", rows)
	}
	if len(file.Processes) != 1 || file.Processes[0].Name != "loadgen" {
		t.Errorf("run.json's processes %+v", file.Processes)
	}
}

// TestLoadRecorderJudgesThresholds: with [load.thresholds], the load
// recorder publishes their states on the stream it subscribes to: pending
// at the start, then, after each measured second, as Thresholds.States
// judges the measurement so far; only when they change, and nothing of
// another run's seconds or after Finish.
func TestLoadRecorderJudgesThresholds(t *testing.T) {
	p99, rps := 5.0, 1.0
	th := &load.Thresholds{Limits: load.Limits{P99Ms: &p99, MinRPS: &rps}}
	events := NewStream()
	var seen []string
	events.Subscribe(func(e Event) {
		if ts, ok := e.(ThresholdStates); ok && ts.Run == "r1" {
			var states []string
			for _, s := range ts.States {
				states = append(states, s.Metric+" "+s.State)
			}
			seen = append(seen, strings.Join(states, ", "))
		}
	})
	second := func(run string, elapsed time.Duration, us ...int64) {
		h := hdr.New(1, 60_000_000, 3)
		for _, v := range us {
			_ = h.RecordValue(v)
		}
		events.Publish(LoadSecond{Run: run, Progress: load.Progress{Elapsed: elapsed, Requests: int64(len(us)), Latency: h}})
	}
	rec := &Recording{Run: "r1", Prepared: &Prepared{Load: load.Config{Thresholds: th}}, Events: events, File: &RunFile{}}
	r := newLoadRecorder(rec)
	if err := r.Start(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	second("r1", time.Second, 1000, 2000)         // p99 2 ms, 2/s: both hold
	second("r1", 2*time.Second, 1000, 2000, 3000) // still
	second("r0", 3*time.Second, 9_000_000)        // another run's
	second("r1", 3*time.Second, 9000)             // p99 9 ms now
	if _, err := r.Finish(&Ended{Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	second("r1", 4*time.Second, 1000)
	want := []string{"p99_ms pending, min_rps pending", "p99_ms holds, min_rps holds", "p99_ms broken, min_rps holds"}
	if !slices.Equal(seen, want) {
		t.Errorf("states on the stream %q\nwant %q", seen, want)
	}
}
