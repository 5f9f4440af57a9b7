package e2e

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/experiment"
)

// hostPods lists the run's host pods that are running, by name.
func hostPods(ctx context.Context, t *testing.T, c *kubetest.Cluster, ns string) map[string]corev1.Pod {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRole + "=" + kube.RoleHost})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

// byProcess groups rows by process.
func byProcess(rows []experiment.ResourceRow) map[string][]experiment.ResourceRow {
	out := map[string][]experiment.ResourceRow{}
	for _, r := range rows {
		out[r.Process] = append(out[r.Process], r)
	}
	return out
}

// The package's longest test (its samples wait on metrics-server's 10 s
// scrapes) is in the file go test reads first, so that it starts first of
// the parallel tests, beside the others rather than after them.

// TestPodResourceSamples: with the metrics API, the experiment's resource
// sampler, fed by the kube deployment, gets rows for every host pod (one
// process per pod), with a cumulative cpu_s that grows at the rate kwok
// emulates and the memory it emulates, including a pod that scaling adds
// during the sampling; and the run's resources warning is gone.
func TestPodResourceSamples(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	c.RequireMetrics(t)
	topo := design(t, c, "60s", "")
	ctx, cancelTest := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancelTest()
	d, err := deploy.Lookup(kube.Name)
	if err != nil {
		t.Fatal(err)
	}
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Stop(context.Background())
	kd := dep.(*kube.Deployment)
	ns := kd.Namespace()

	// The runner's sampler, as runOne makes it: its own ticks have no
	// process to read here, the deployment reports the pods.
	rs := experiment.NewResourceSampler(nil, time.Hour)
	rs.Stream(dep)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	zero := time.Now()
	rs.Start(sctx, zero)

	// everySampled waits until every running host pod has n samples.
	everySampled := func(what string, n int) map[string]corev1.Pod {
		t.Helper()
		for {
			pods := hostPods(ctx, t, c, ns)
			rows := byProcess(rs.Rows())
			var missing []string
			for name := range pods {
				if len(rows[name]) < n {
					missing = append(missing, name)
				}
			}
			if len(missing) == 0 {
				t.Logf("%s: %d samples of each of %d host pods after %s", what, n, len(pods), time.Since(zero).Round(time.Millisecond))
				return pods
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: pods %v without %d samples after %s; metrics-server:\n%s", what, missing, n, time.Since(zero).Round(time.Second), c.Log("metrics-server"))
			case <-time.After(time.Second):
			}
		}
	}
	// A pod added while sampling goes on: scaled at once, not after the
	// first samples, so that the two waits on metrics-server's scrapes
	// (a new pod's first rate takes two) overlap; waiting for the first
	// samples before scaling made this the kube tests' longest wait
	// (116 s of their 160 s, 2026-11-29).
	before := hostPods(ctx, t, c, ns)

	// One more replica of hop1, as an HPA would add it.
	scale, err := c.Client.AppsV1().Deployments(ns).GetScale(ctx, "hop1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas++
	if _, err := c.Client.AppsV1().Deployments(ns).UpdateScale(ctx, "hop1", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	scaledAt := time.Now()
	var added []string
	for len(added) == 0 {
		for name, p := range hostPods(ctx, t, c, ns) {
			if _, ok := before[name]; !ok && p.Labels[kube.LabelGroup] == "hop1" {
				added = append(added, name)
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no hop1 pod running after scaling it to 2")
		case <-time.After(200 * time.Millisecond):
		}
	}
	after := everySampled("after scaling hop1", 2)
	stop()
	if len(added) != 1 {
		t.Fatalf("hop1 pods added by scaling: %v, want one", added)
	}
	for name, rr := range byProcess(rs.Rows()) {
		t.Logf("%s: %d samples, the first at t_s %.1f (cpu_s %.3f), the last at %.1f (cpu_s %.3f)", name, len(rr), rr[0].TS, rr[0].CPUS, rr[len(rr)-1].TS, rr[len(rr)-1].CPUS)
	}
	rows := byProcess(rs.Rows())
	if first := rows[added[0]][0].TS; first < scaledAt.Sub(zero).Seconds()-1 {
		t.Errorf("the added pod's first sample at t_s %.1f, before it was made (%.1f)", first, scaledAt.Sub(zero).Seconds())
	}

	rate := kubetest.PodCPU.AsApproximateFloat64()
	for name, rr := range rows {
		if _, ok := after[name]; !ok {
			if _, ok := before[name]; !ok {
				t.Errorf("rows of %s, which is no host pod of the run", name)
			}
		}
		for i, r := range rr {
			if r.Role != deploy.RoleHost || r.PID != 0 {
				t.Errorf("%s: row %+v, want role host and no pid", name, r)
			}
			if r.RSSBytes != kubetest.PodMemory.Value() {
				t.Errorf("%s: rss_bytes %d, want kwok's %d (one container)", name, r.RSSBytes, kubetest.PodMemory.Value())
			}
			if i == 0 {
				if r.CPUS <= 0 {
					t.Errorf("%s: first cpu_s %g, want its first window's use", name, r.CPUS)
				}
				continue
			}
			if r.TS <= rr[i-1].TS || r.CPUS < rr[i-1].CPUS {
				t.Errorf("%s: row %d (t_s %.2f, cpu_s %.3f) after (t_s %.2f, cpu_s %.3f): time and cpu_s must grow", name, i, r.TS, r.CPUS, rr[i-1].TS, rr[i-1].CPUS)
			}
		}
		// The counter's slope is kwok's usage: metrics-server's rates
		// over adjoining windows, times the windows.
		last, first := rr[len(rr)-1], rr[0]
		if got := (last.CPUS - first.CPUS) / (last.TS - first.TS); math.Abs(got-rate) > 0.25*rate {
			t.Errorf("%s: cpu_s grows at %.3f cores over %.1f s, want kwok's %.3f", name, got, last.TS-first.TS, rate)
		}
	}
	var joined []string
	for _, p := range rs.Joined() {
		joined = append(joined, p.Name)
		if p.Group == "hop1" && !slices.Equal(p.Components, []string{"hop1"}) {
			t.Errorf("process %s of group hop1 has components %v", p.Name, p.Components)
		}
	}
	if want := slices.Sorted(maps.Keys(rows)); !slices.Equal(slices.Sorted(slices.Values(joined)), want) {
		t.Errorf("the run's processes %v, want one per sampled pod %v", joined, want)
	}
	if note := kd.ResourceNote(); note != "" {
		t.Errorf("resource note %q with samples of every pod", note)
	}
}

// TestNoMetricsAPINoSamples: on a cluster without the metrics API, the
// deployment reports no sample and the run's warning says why. Where the
// shared cluster serves the API, a second control plane without
// metrics-server stands in.
func TestNoMetricsAPINoSamples(t *testing.T) {
	c := kubetest.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if c.NoMetrics == "" {
		var err error
		if c, err = kubetest.Start(ctx, 1, kubetest.Options{NoMetrics: true}); err != nil {
			t.Fatal(err)
		}
		defer c.Stop()
	}
	topo := design(t, c, "60s", "")
	d, _ := deploy.Lookup(kube.Name)
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Stop(context.Background())
	kd := dep.(*kube.Deployment)

	done := make(chan struct{})
	var emitted int
	go func() {
		defer close(done)
		kd.StreamResources(ctx, func(deploy.ProcessInfo, time.Time, deploy.Usage) { emitted++ })
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("StreamResources still runs 30 s in, without a metrics API to read")
	}
	if emitted != 0 {
		t.Errorf("%d samples without a metrics API", emitted)
	}
	note := kd.ResourceNote()
	if !strings.HasPrefix(note, kube.ResourceNotePrefix+"no CPU or memory samples of the pods") || !strings.Contains(note, "the cluster serves no metrics API (metrics.k8s.io") {
		t.Errorf("resource note %q, want that the cluster serves no metrics API", note)
	}
}
