package autoscaler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/autoscaler"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// busy is a replica that uses cores CPUs from its start: its CPU counter
// grows with the wall clock.
type busy struct {
	start time.Time
	cores float64
}

func (b busy) Sample(context.Context) (deploy.Usage, error) {
	return deploy.Usage{CPUSeconds: b.cores * time.Since(b.start).Seconds(), RSSBytes: 1 << 20}, nil
}

// group is a synthetic deployment of one group whose replicas each use
// cores CPUs, whatever their count.
type group struct {
	mu       sync.Mutex
	cores    float64
	replicas []autoscaler.Replica
	next     int
	scaled   []int
}

func (g *group) add(n int) {
	for range n {
		now := time.Now()
		g.replicas = append(g.replicas, autoscaler.Replica{Name: fmt.Sprintf("g#%d", g.next), ReadyAt: now, Resources: busy{now, g.cores}})
		g.next++
	}
}

func (g *group) Live(int) []autoscaler.Replica {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]autoscaler.Replica(nil), g.replicas...)
}

func (g *group) Scale(_ context.Context, _ string, n int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.scaled = append(g.scaled, n)
	if n > len(g.replicas) {
		g.add(n - len(g.replicas))
	} else {
		g.replicas = g.replicas[:n]
	}
	return nil
}

// TestAutoscalersScaleOnCPU: a group whose one replica uses a whole core,
// against a target of 50% of one core, is scaled to two replicas, the
// decision recorded with its CPU reading; a group without an autoscaler
// is never read.
func TestAutoscalersScaleOnCPU(t *testing.T) {
	const period = 100 * time.Millisecond
	topo := &runtime.Topology{Groups: []runtime.Group{
		{Name: "plain"},
		{Name: "g", Autoscale: &runtime.Autoscale{
			Autoscale:  spec.Autoscale{Min: 1, Max: 4, CPUTarget: 50, SyncPeriod: spec.Duration(period), Tolerance: 0.1},
			CPURequest: 1,
		}},
	}}
	g := &group{cores: 1}
	g.add(1)
	as, err := autoscaler.Start(topo, g, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		n := len(g.replicas)
		g.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d replicas; scaled %v", n, g.scaled)
		}
		time.Sleep(period / 2)
	}
	as.Stop()
	evs := as.Events()
	var up *deploy.ScaleEvent
	for i, e := range evs {
		if e.Group != "g" {
			t.Errorf("event of group %s: %+v", e.Group, e)
		}
		if e.Current == 1 && e.Desired == 2 && up == nil {
			up = &evs[i]
		}
	}
	if up == nil {
		t.Fatalf("no decision from 1 to 2 replicas among %+v", evs)
	}
	if up.Metric != "cpu" || up.Target != 50 || up.Utilization < 80 || up.Utilization > 120 {
		t.Errorf("decision %+v: want cpu near 100%% of a 50%% target", *up)
	}
	if g.scaled[0] != 2 {
		t.Errorf("first scale to %d, want 2", g.scaled[0])
	}
}
