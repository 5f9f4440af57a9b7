package capacity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/load"
)

// TestLoadStep drives a real HTTP server of known capacity: each answer
// takes 20 ms and the generator has 4 HTTP/1.1 connections, one request
// at a time on each, so at most 200 answers a second. A step at a quarter
// of that passes its full length; one at three times that builds a queue
// whose median passes the 100 ms limit within a second or two, and the
// Cutter ends it long before its 4 s.
func TestLoadStep(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
	}))
	defer srv.Close()
	base := load.Config{Mode: load.Open, Rate: 1, Target: srv.URL, Connections: 4, Duration: load.Duration(4 * time.Second)}
	target, err := load.NewTarget(base)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	slo := p99SLO(100)
	seconds := 0
	step := LoadStep(base, target, slo, load.Options{}, func(float64, load.Progress) { seconds++ })

	m, err := step(context.Background(), 600)
	if err != nil {
		t.Fatal(err)
	}
	if m.CutShort == "" || m.Summary.DurationS > 3 {
		t.Fatalf("a step at 3x capacity: cut %q after %.1f s, want it cut well before its 4 s", m.CutShort, m.Summary.DurationS)
	}
	if st := judge(m, slo, 600); st.Pass {
		t.Fatalf("a step at 3x capacity passed: %+v", st)
	}
	if seconds == 0 {
		t.Fatal("progress saw no second")
	}

	base.Duration = load.Duration(time.Second)
	m, err = LoadStep(base, target, slo, load.Options{}, nil)(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	st := judge(m, slo, 50)
	if m.CutShort != "" || st.Requests < 45 || st.Latency.P50Ms < 20 {
		t.Fatalf("a step at a quarter of capacity: %+v, want about 50 answers of at least 20 ms, not cut", st)
	}
	if !st.Pass && st.Inconclusive == "" && st.Latency.P99Ms < 100 {
		t.Fatalf("a step at a quarter of capacity failed: %+v", st)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := step(ctx, 50); err == nil {
		t.Fatal("a step with its context canceled: want an error")
	}
}
