package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/hostclock"
)

// TestMain lets this test binary be the sentinel a run starts: run as
// `load.test hostclock --sentinel ...` it is what `svclab hostclock
// --sentinel` is, the same hostclock.SentinelMain in a process of its own.
func TestMain(m *testing.M) {
	hostclock.MainIfAsked()
	os.Exit(m.Run())
}

// children lists this process's live child processes.
func children(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []string
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

func okServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	return srv
}

// An open loop with a sentinel: the sentinel runs as its own process for
// the window at the run's gap (200/s: 5 ms), reports, and is gone; its
// floor is what the run was judged against.
func TestSentinelJudgesTheRun(t *testing.T) {
	srv := okServer(t)
	before := len(children(t))
	res := run(t, Config{Target: srv.URL, Rate: 200, Warmup: Duration(300 * time.Millisecond), Duration: Duration(1500 * time.Millisecond)},
		Options{Sentinel: os.Args[0], HostTimer: &hostclock.Calibration{P99Ms: 0.2, P999Ms: 0.5}})
	g := res.Generator
	if g.Sentinel == nil {
		t.Fatalf("no sentinel in the audit: floor %+v, warnings %q", g.Floor, res.Warnings)
	}
	s := g.Sentinel
	// 1.5 s at 5 ms: at most 301 wake-ups; a busy host loses some.
	if s.Samples < 30 || s.Samples > 301 || len(s.IntervalsUs) != 1 || s.IntervalsUs[0] != 5000 {
		t.Errorf("sentinel %+v: want up to 301 wake-ups at 5000 µs", s)
	}
	if s.DurationS < 1.4 || s.DurationS > 1.6 {
		t.Errorf("sentinel window %.3f s, want the run's 1.5 s", s.DurationS)
	}
	f := g.Floor
	if f == nil || f.Source != FloorWindow || f.P99Ms != s.P99Ms || len(f.Intervals) != 2 || f.Intervals[0].Floor == nil && f.Intervals[0].Note == "" || f.Note != "" {
		t.Errorf("floor %+v: want the window's, from sentinel p99 %v", f, s.P99Ms)
	}
	if g.SentinelCPUPercent <= 0 || g.SentinelCPUPercent > 10 {
		t.Errorf("sentinel CPU %.2f%%: want a small, measured share", g.SentinelCPUPercent)
	}
	if got := len(children(t)); got > before {
		t.Errorf("%d child processes left after the run (%d before)", got, before)
	}
}

// A sentinel that cannot start leaves the run judged against the
// experiment's calibration, and the floor says why.
func TestSentinelMissingFallsBack(t *testing.T) {
	srv := okServer(t)
	cal := floorCal(2000, 30, 50, 200)
	res := run(t, Config{Target: srv.URL, Rate: 200, Duration: Duration(700 * time.Millisecond)},
		Options{Sentinel: "/nonexistent/svclab", HostTimer: cal})
	f := res.Generator.Floor
	if f == nil || f.Source != FloorExperiment || f.P99Ms != cal.P99Ms || len(f.Intervals) != 2 || !strings.Contains(f.Note, "/nonexistent/svclab") {
		t.Errorf("floor %+v: want the experiment's, with the failed start named", f)
	}
	if res.Generator.Sentinel != nil {
		t.Errorf("a sentinel that never ran reported %+v", res.Generator.Sentinel)
	}
}

// A canceled run ends its sentinel too: Run returns promptly and leaves
// no process behind.
func TestSentinelCanceledRun(t *testing.T) {
	srv := okServer(t)
	before := len(children(t))
	cfg := Config{Target: srv.URL, Rate: 200, Duration: Duration(time.Minute)}
	tg, err := NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	res, err := Run(ctx, cfg, tg, Options{Sentinel: os.Args[0]})
	if err == nil {
		t.Fatal("a canceled run returned no error")
	}
	if res != nil {
		defer res.Close()
	}
	if took := time.Since(t0); took > 8*time.Second {
		t.Errorf("canceled run returned after %v", took)
	}
	if got := len(children(t)); got > before {
		t.Errorf("%d child processes left after a canceled run (%d before)", got, before)
	}
}

// The saturation warning: a service that answers one request at a time
// in 20 ms (at most 50/s) loaded at 200/s answers at most a quarter of
// what is offered in time, the rest time out (500 ms), and is warned; a
// service answering at once at 100/s is not.
func TestSaturationWarning(t *testing.T) {
	var mu sync.Mutex
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		time.Sleep(20 * time.Millisecond)
		mu.Unlock()
		w.Write([]byte("ok"))
	}))
	t.Cleanup(slow.Close)
	res := run(t, Config{Target: slow.URL, Rate: 200, Duration: Duration(1500 * time.Millisecond), Timeout: Duration(500 * time.Millisecond)}, Options{})
	tot := mustOp(t, res, "total")
	w := texts(res.Warnings)
	if !strings.Contains(w, "saturated: completed ") || !strings.Contains(w, fmt.Sprintf(" %d requests timed out", tot.ErrorsByClass["timeout"])) || tot.ErrorsByClass["timeout"] < 100 {
		t.Errorf("completed %.1f/s of 200 offered, %v; warnings %q: want a saturated warning naming the timeouts", tot.CompletedRPS, tot.ErrorsByClass, w)
	}
	res = run(t, Config{Target: okServer(t).URL, Rate: 100, Duration: Duration(1500 * time.Millisecond)}, Options{})
	if w := texts(res.Warnings); strings.Contains(w, "saturated") {
		t.Errorf("a healthy service warned: %q (completed %.1f/s)", w, mustOp(t, res, "total").CompletedRPS)
	}
}
