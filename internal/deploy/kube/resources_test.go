package kube

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/svclab/svclab/internal/deploy"
)

func podMetrics(at time.Time, window time.Duration, usage ...string) *metricsv1beta1.PodMetrics {
	pm := &metricsv1beta1.PodMetrics{Timestamp: metav1.NewTime(at), Window: metav1.Duration{Duration: window}}
	for i := 0; i+1 < len(usage); i += 2 {
		pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Usage: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(usage[i]), corev1.ResourceMemory: resource.MustParse(usage[i+1]),
		}})
	}
	return pm
}

// TestPodCounter: metrics-server's rates over adjoining windows add up to
// the CPU counter; a pod's containers are summed; a sample read twice or
// one without containers yet counts nothing.
func TestPodCounter(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var c podCounter
	steps := []struct {
		pm      *metricsv1beta1.PodMetrics
		ok      bool
		cpu     float64
		mem     int64
		comment string
	}{
		{podMetrics(t0, 0), false, 0, 0, "listed before two scrapes: no containers"},
		{podMetrics(t0, 10*time.Second, "100m", "48Mi", "50m", "16Mi"), true, 1.5, 64 << 20, "first: its own window, 150m for 10 s"},
		{podMetrics(t0, 10*time.Second, "100m", "48Mi", "50m", "16Mi"), false, 0, 0, "the same sample, read again"},
		{podMetrics(t0.Add(15*time.Second), 15*time.Second, "200m", "40Mi"), true, 4.5, 40 << 20, "then 200m for the 15 s since"},
		{podMetrics(t0.Add(10*time.Second), 10*time.Second, "1", "1Mi"), false, 0, 0, "an older sample"},
		{podMetrics(t0.Add(45*time.Second), 15*time.Second, "1", "1Mi"), true, 34.5, 1 << 20, "a missed scrape: the later rate stands for 30 s"},
	}
	for _, s := range steps {
		u, ok := c.add(s.pm)
		if ok != s.ok {
			t.Fatalf("%s: counted %v, want %v", s.comment, ok, s.ok)
		}
		if !ok {
			continue
		}
		if math.Abs(u.CPUSeconds-s.cpu) > 1e-9 || u.RSSBytes != s.mem {
			t.Errorf("%s: cpu_s %g rss %d, want %g and %d", s.comment, u.CPUSeconds, u.RSSBytes, s.cpu, s.mem)
		}
	}
}

// TestPodProcess: a host pod is a process of its group (by the group
// label, which is the group's DNS name), a load pod a load generator,
// and a backing service's pod is not sampled.
func TestPodProcess(t *testing.T) {
	_, topo := resolve(t, strings.Replace(chainSplit, `"split"`, `"two"`, 1)+"[deploy.placements]\ntwo = [[\"hop1\"], [\"hop2\", \"hop3\"]]\n")
	dep := &Deployment{topo: topo}
	p, ok := dep.podProcess("hop2-hop3-5d8f-x", map[string]string{LabelRole: RoleHost, LabelGroup: "hop2-hop3"})
	if !ok || p.Name != "hop2-hop3-5d8f-x" || p.Role != deploy.RoleHost || p.Group != "hop2+hop3" || len(p.Components) != 2 {
		t.Errorf("host pod: %+v %v", p, ok)
	}
	if p, ok := dep.podProcess("svclab-load-0-q", map[string]string{LabelRole: RoleLoad}); !ok || p.Role != deploy.RoleLoadGen {
		t.Errorf("load pod: %+v %v", p, ok)
	}
	if _, ok := dep.podProcess("backing-db-x", map[string]string{LabelRole: RoleBacking}); ok {
		t.Error("a backing service's pod is sampled")
	}
}
