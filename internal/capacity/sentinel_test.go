package capacity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/tempdir"
)

// TestMain lets this test binary be the sentinel a step starts: run as
// `capacity.test hostclock --sentinel ...` it is `svclab hostclock
// --sentinel`, the same hostclock.SentinelMain. At the end it removes the
// process's temp root, as svclab's commands do (it was left behind).
func TestMain(m *testing.M) {
	hostclock.MainIfAsked()
	code := m.Run()
	_ = tempdir.RemoveOwn()
	os.Exit(code)
}

// A capacity step runs the timer loop beside its window, at the step's
// own rate, and its audit is judged against that window's floor.
func TestLoadStepSentinel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	base := load.Config{Mode: load.Open, Rate: 1, Target: srv.URL, Duration: load.Duration(time.Second)}
	target, err := load.NewTarget(base)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	m, err := LoadStep(base, target, p99SLO(100), load.Options{Sentinel: os.Args[0]}, nil)(context.Background(), 250)
	if err != nil {
		t.Fatal(err)
	}
	s, f := m.Generator.Sentinel, m.Generator.Floor
	if s == nil || len(s.IntervalsUs) != 1 || s.IntervalsUs[0] != 4000 {
		t.Errorf("sentinel %+v: want wake-ups at the step's 4 ms gap", s)
	}
	if f == nil || f.Source != load.FloorWindow || len(f.Intervals) != 2 {
		t.Errorf("floor %+v: want the window's", f)
	}
}
