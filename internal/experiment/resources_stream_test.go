package experiment

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// streaming is a deployment that reports samples itself, as the kube
// deployer's pods do (its real one is tested in internal/deploy/kube/e2e
// against a control plane with metrics-server).
type streaming struct {
	deploy.Deployment
	samples []streamed
	emit    chan func(deploy.ProcessInfo, time.Time, deploy.Usage)
}

type streamed struct {
	p  deploy.ProcessInfo
	at time.Time
	u  deploy.Usage
}

func (s *streaming) Capabilities() deploy.Capabilities {
	return deploy.Capabilities{Resources: s}
}

func (s *streaming) StreamResources(ctx context.Context, emit func(deploy.ProcessInfo, time.Time, deploy.Usage)) {
	for _, x := range s.samples {
		emit(x.p, x.at, x.u)
	}
	s.emit <- emit
	<-ctx.Done()
}

// TestResourceSamplerStream: a deployment's own samples land in the rows at
// their own times (before the sampler's ticks, and moved by SetZero like
// them), in time order, each process joins once, and a sample reported
// after the sampler stopped is dropped.
func TestResourceSamplerStream(t *testing.T) {
	zero := time.Now()
	a := deploy.ProcessInfo{Name: "pod-a", Role: deploy.RoleHost, Group: "hop1"}
	b := deploy.ProcessInfo{Name: "pod-b", Role: deploy.RoleLoadGen}
	dep := &streaming{
		samples: []streamed{
			{a, zero.Add(5 * time.Second), deploy.Usage{CPUSeconds: 2, RSSBytes: 10}},
			{b, zero.Add(-2 * time.Second), deploy.Usage{CPUSeconds: 1, RSSBytes: 20}},
			{a, zero.Add(15 * time.Second), deploy.Usage{CPUSeconds: 3, RSSBytes: 11}},
		},
		emit: make(chan func(deploy.ProcessInfo, time.Time, deploy.Usage), 1),
	}
	rs := NewResourceSampler(nil, time.Hour)
	rs.Stream(dep)
	ctx, cancel := context.WithCancel(context.Background())
	rs.Start(ctx, zero)
	emit := <-dep.emit
	rs.SetZero(zero.Add(time.Second))
	cancel()
	emit(a, zero.Add(20*time.Second), deploy.Usage{CPUSeconds: 4})

	var got []string
	for _, r := range rs.Rows() {
		got = append(got, r.Process)
		if r.PID != 0 || r.CFSPeriods != nil {
			t.Errorf("row %+v: a pod has no pid and no cgroup counters", r)
		}
	}
	if want := []string{"pod-b", "pod-a", "pod-a"}; !slices.Equal(got, want) {
		t.Fatalf("rows of %v, want %v in time order", got, want)
	}
	rows := rs.Rows()
	for i, want := range []float64{-3, 4, 14} {
		if rows[i].TS != want {
			t.Errorf("row %d at t_s %g, want %g (its time less the zero)", i, rows[i].TS, want)
		}
	}
	if rows[2].CPUS != 3 || rows[2].RSSBytes != 11 || rows[2].Role != deploy.RoleHost {
		t.Errorf("last row %+v, want pod-a's second sample", rows[2])
	}
	joined := rs.Joined()
	if len(joined) != 2 || joined[0].Name != "pod-a" || joined[1].Name != "pod-b" || joined[0].Group != "hop1" {
		t.Errorf("joined %+v, want pod-a then pod-b, once each", joined)
	}
}

// TestResourceSamplerNoStream: a deployment that samples nothing itself
// leaves the sampler as it was.
func TestResourceSamplerNoStream(t *testing.T) {
	rs := NewResourceSampler(nil, time.Hour)
	rs.Stream(plain{})
	if rs.stream != nil {
		t.Fatal("a deployment without StreamResources streams")
	}
}

// plain is a deployment with no capability beyond deploy.Deployment.
type plain struct{ deploy.Deployment }

func (plain) Capabilities() deploy.Capabilities { return deploy.Capabilities{} }
