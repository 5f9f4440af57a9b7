package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/warn"
)

// metricsGroup is the API group of the resource metrics API.
const metricsGroup = "metrics.k8s.io"

// metricsPollEvery is how often StreamResources lists the pods' metrics:
// well under metrics-server's resolution (10 s at least, 15 s by
// default), so a new sample, and a pod an HPA adds, is read soon after it
// appears. A sample read again is recorded once.
const metricsPollEvery = 2 * time.Second

// podSampling is what StreamResources found, for ResourceNote.
type podSampling struct {
	mu      sync.Mutex
	samples int
	err     error // the last failure to list the pods' metrics
}

// StreamResources reports the CPU and memory of the run's host and load
// pods, read from the cluster's resource metrics API
// (pods.metrics.k8s.io, served by metrics-server), until ctx is done; the
// experiment runner records them in resources.parquet
// (deploy.ResourceStreamer, Capabilities.Resources). Each pod is one process, named after it;
// the pods an HPA adds are reported from their first sample on, the ones
// it removes stop having samples. Without the metrics API it returns at
// once, and ResourceNote says so.
func (dep *Deployment) StreamResources(ctx context.Context, emit func(p deploy.ProcessInfo, at time.Time, u deploy.Usage)) {
	serves, err := dep.servesMetrics()
	if err != nil {
		dep.sampling.failed(err)
	}
	if !serves {
		return
	}
	mc, err := metricsclient.NewForConfig(dep.client.Config)
	if err != nil {
		dep.sampling.failed(fmt.Errorf("metrics API client: %w", err))
		return
	}
	counters := map[string]*podCounter{}
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + dep.id}
	for {
		list, err := mc.MetricsV1beta1().PodMetricses(dep.ns).List(ctx, sel)
		switch {
		case err != nil && ctx.Err() == nil:
			dep.sampling.failed(apiError(dep.client, "list the pods' metrics", err))
		case err == nil:
			for i := range list.Items {
				pm := &list.Items[i]
				info, ok := dep.podProcess(pm.Name, pm.Labels)
				if !ok {
					continue
				}
				c := counters[pm.Name]
				if c == nil {
					c = &podCounter{}
					counters[pm.Name] = c
				}
				if u, ok := c.add(pm); ok {
					emit(info, pm.Timestamp.Time, u)
					dep.sampling.sampled()
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(metricsPollEvery):
		}
	}
}

func (s *podSampling) sampled() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
}

func (s *podSampling) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *podSampling) state() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.err
}

// podProcess names the process a pod of the run is: a host of its group,
// or a load generator. A backing service's pod is left out, as the local
// deployer does not sample its backing servers either: what they cost is
// not the design point's.
func (dep *Deployment) podProcess(name string, labels map[string]string) (deploy.ProcessInfo, bool) {
	switch labels[LabelRole] {
	case RoleHost:
		p := deploy.ProcessInfo{Name: name, Role: deploy.RoleHost, Group: labels[LabelGroup]}
		for _, g := range dep.topo.Groups {
			if n, err := dnsName(g.Name); err == nil && n == labels[LabelGroup] {
				p.Group, p.Components = g.Name, g.Components
			}
		}
		return p, true
	case RoleLoad:
		return deploy.ProcessInfo{Name: name, Role: deploy.RoleLoadGen}, true
	}
	return deploy.ProcessInfo{}, false
}

// podCounter turns a pod's metrics into the cumulative counter
// resources.parquet holds. metrics-server reports each container's CPU as
// a rate over a window (between its last two scrapes of the kubelet)
// ending at the sample's timestamp, and consecutive windows adjoin; so
// the rate times the time since the previous sample, summed, is the
// kubelet's own CPU counter at the scrapes, wherever no scrape is missed.
// Where one is, the rate of the later window stands for both.
type podCounter struct {
	at  time.Time // the timestamp of the last sample counted
	cpu float64   // core-seconds up to at
}

// add counts a sample of the pod and returns the pod's usage, or false
// for a sample counted already or one without containers (metrics-server
// lists a pod so until it has two scrapes of every container).
func (c *podCounter) add(pm *metricsv1beta1.PodMetrics) (deploy.Usage, bool) {
	at := pm.Timestamp.Time
	if len(pm.Containers) == 0 || (!c.at.IsZero() && !at.After(c.at)) {
		return deploy.Usage{}, false
	}
	var cores float64
	var mem int64
	for _, ct := range pm.Containers {
		cores += ct.Usage.Cpu().AsApproximateFloat64()
		mem += ct.Usage.Memory().Value()
	}
	// The first sample counts its own window, which for a new container
	// starts at the container's start: the counter is then the pod's CPU
	// since it started, as a local process's is.
	span := pm.Window.Duration
	if !c.at.IsZero() {
		span = at.Sub(c.at)
	}
	c.cpu += cores * span.Seconds()
	c.at = at
	return deploy.Usage{CPUSeconds: c.cpu, RSSBytes: mem}, true
}

// servesMetrics tells whether the cluster serves the metrics API.
func (dep *Deployment) servesMetrics() (bool, error) {
	groups, err := dep.client.Typed.Discovery().ServerGroups()
	if err != nil {
		return false, apiError(dep.client, "discovery", err)
	}
	for _, g := range groups.Groups {
		if g.Name == metricsGroup {
			return true, nil
		}
	}
	return false, nil
}

// ResourceNotePrefix starts ResourceNote's warning: the report collects
// the warnings with it into one line per experiment, as the cluster, not
// the run, lacks the samples.
const ResourceNotePrefix = string(warn.Resources) + ": "

// ResourceNote is run.json's warning that the run's resources.parquet has
// no samples of the pods, and why: whether the cluster serves the metrics
// API (metrics.k8s.io, e.g. metrics-server), and if it does, why
// StreamResources read none. It is "" once a pod had a sample.
func (dep *Deployment) ResourceNote() string {
	const none = ResourceNotePrefix + "no CPU or memory samples of the pods in resources.parquet (CPU per request is not reported): "
	n, lerr := dep.sampling.state()
	if n > 0 {
		return ""
	}
	serves, err := dep.servesMetrics()
	switch {
	case err != nil:
		return none + "cannot tell whether the cluster serves the metrics API: " + err.Error()
	case !serves:
		return none + "the cluster serves no metrics API (" + metricsGroup + ", e.g. metrics-server)"
	case lerr != nil:
		return none + "the cluster serves the metrics API (" + metricsGroup + "), but reading it failed: " + lerr.Error()
	}
	return none + "the cluster serves the metrics API (" + metricsGroup + "), but had no sample of a pod during the run (metrics-server has one once it scraped a pod twice, 15 s apart by default: a longer run has them)"
}
