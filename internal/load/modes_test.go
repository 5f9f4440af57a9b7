package load

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/warn"
)

func noop(name string, weight float64) Op {
	return Op{Name: name, Weight: weight, Do: func(context.Context, *Session) error { return nil }}
}

// TestWeighted: a weighted target runs one step per iteration, in
// proportion to the weights.
func TestWeighted(t *testing.T) {
	tg := &Target{Ops: []Op{noop("a", 3), noop("b", 1)}, Weighted: true, Flow: "pick"}
	res, err := Run(context.Background(), Config{Mode: "closed", Users: 2, Requests: 4000, Seed: 7}, tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	a, b, f := mustOp(t, res, "a"), mustOp(t, res, "b"), mustOp(t, res, "pick")
	if a.Count+b.Count != 4000 || f.Count != 4000 {
		t.Fatalf("a %d + b %d, flow %d: want 4000 each way", a.Count, b.Count, f.Count)
	}
	if r := float64(a.Count) / float64(b.Count); r < 2.5 || r > 3.6 {
		t.Fatalf("a/b = %.2f, want about 3", r)
	}
}

// TestSpawnRate: closed-loop users start no faster than spawn_rate and
// follow the stages down.
func TestSpawnRate(t *testing.T) {
	var mu sync.Mutex
	first := map[int]time.Duration{}
	last := map[int]time.Duration{}
	start := time.Now()
	tg := &Target{Ops: []Op{{Name: "op", Weight: 1, Do: func(_ context.Context, s *Session) error {
		el := time.Since(start)
		mu.Lock()
		if _, ok := first[s.User]; !ok {
			first[s.User] = el
		}
		last[s.User] = el
		mu.Unlock()
		return nil
	}}}}
	cfg := Config{Mode: "closed", Users: 4, SpawnRate: 5, ThinkTime: Duration(10 * time.Millisecond),
		Stages: []Stage{{Type: "step", Duration: Duration(time.Second), Users: 4}, {Type: "step", Duration: Duration(500 * time.Millisecond), Users: 1}}}
	res, err := Run(context.Background(), cfg, tg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(first) != 4 {
		t.Fatalf("%d users ran, want 4", len(first))
	}
	// At 5 users/s the fourth user starts about 0.8 s in.
	if first[3] < 600*time.Millisecond {
		t.Errorf("user 3 started at %v, before spawn_rate allows", first[3])
	}
	for u := 1; u < 4; u++ {
		if last[u] > 1200*time.Millisecond {
			t.Errorf("user %d still ran at %v, after the stage down to 1 user", u, last[u])
		}
	}
	if last[0] < 1300*time.Millisecond {
		t.Errorf("user 0 stopped at %v, before the end", last[0])
	}
}

// TestBottleneckFlag: an open loop asked for far more than it can send is
// late, and says the generator was the bottleneck. Run refuses such a
// rate (MaxRate), so the runner is driven directly. Each call holds a CPU
// for 20 µs, so 2 million a second need 40 cores: on a quiet machine a
// no-op target was sent at 2 million a second on time.
func TestBottleneckFlag(t *testing.T) {
	spin := func(context.Context, *Session) error {
		for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
		}
		return nil
	}
	tg := &Target{Ops: []Op{{Name: "spin", Weight: 1, Do: spin}}}
	res, err := runUnchecked(t, Config{Rate: 2e6, Duration: Duration(300 * time.Millisecond)}, tg)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	g := res.Generator
	if !g.Bottleneck || !strings.Contains(g.Reason, "late") || g.LateSends == 0 {
		t.Fatalf("generator %+v: want the bottleneck flag for late sends", g)
	}
	if len(res.Warnings) == 0 || res.Warnings[0].Kind != warn.GeneratorBottleneck || !strings.HasPrefix(res.Warnings[0].Text, "generator_bottleneck: ") {
		t.Fatalf("warnings %v", res.Warnings)
	}
}
