package realnode

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/load"
)

// hpaSpec is a CPU-bound group: hop1 of a chain with the large payload
// (300,000 characters per hop: hop1 copies hop2's answer and appends its
// own), limited to 0.2 core and autoscaled at 15% of it: at 25 requests
// a second it used 32% (2.6 ms of CPU a request) on this machine.
const hpaSpec = `
[app]
name = "chain"
hops = 2
payload = "large"

[deploy]
deployer = "kube"
transport = "grpc"
placement = "split"
start_timeout = "180s"

[deploy.kube]
image = "` + kubetest.Image + `"

[deploy.resources.hop1]
cpu = 0.2
memory = "256MiB"

[deploy.autoscale.hop1]
min = 1
max = 3
cpu_target = 15

[load]
mode = "open"
rate = 25
warmup = "5s"
duration = "75s"
`

// cpuTarget is hpaSpec's cpu_target, in percent.
const cpuTarget = 15

// testHPAScalesOnKubeletMetrics: under load, the HPA of the CPU-bound
// group reads its pods' CPU from the metrics API, which metrics-server
// scrapes from the real kubelet's /metrics/resource (no kwok runs here),
// finds it above target and scales the Deployment up; the new pods run.
func testHPAScalesOnKubeletMetrics(t *testing.T, c *kubetest.Cluster) {
	c.RequireMetrics(t)
	topo := resolve(t, hpaSpec)
	d, err := deploy.Lookup(kube.Name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Stop(context.Background())
	kd := dep.(*kube.Deployment)
	ns := kd.Namespace()

	// Watch the HPA while the load runs. Once it has asked for a second
	// pod on hop1's CPU and that pod runs, what the test is about has
	// happened, and the load stops early: it runs 75 s at most, but the
	// HPA acts within about 15 s of its start.
	var (
		mu          sync.Mutex
		maxDesired  int32
		maxUtil     int32
		maxRunning  int
		firstScaled time.Duration
		scaled      bool
	)
	start := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	watchCtx, stopWatch := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for watchCtx.Err() == nil {
			h, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(watchCtx, "hop1", metav1.GetOptions{})
			pods, perr := c.Client.CoreV1().Pods(ns).List(watchCtx, metav1.ListOptions{LabelSelector: "svclab.dev/group=hop1"})
			if err == nil && perr == nil {
				mu.Lock()
				if h.Status.DesiredReplicas > maxDesired {
					maxDesired = h.Status.DesiredReplicas
					if maxDesired > 1 && firstScaled == 0 {
						firstScaled = time.Since(start)
					}
				}
				for _, m := range h.Status.CurrentMetrics {
					if m.Resource != nil && m.Resource.Current.AverageUtilization != nil && *m.Resource.Current.AverageUtilization > maxUtil {
						maxUtil = *m.Resource.Current.AverageUtilization
					}
				}
				if n := len(running(pods.Items)); n > maxRunning {
					maxRunning = n
				}
				if !scaled && maxUtil > cpuTarget && maxDesired >= 2 && maxRunning >= 2 {
					scaled = true
					stopLoad()
				}
				mu.Unlock()
			}
			select {
			case <-watchCtx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	res, lerr := kd.RunLoad(loadCtx, load.Config{}, load.Options{})
	stopWatch()
	<-done
	switch {
	case scaled:
		t.Logf("the load stopped %s after it began, the HPA having scaled", time.Since(start).Round(time.Second))
	case lerr != nil:
		t.Fatalf("load: %v", lerr)
	default:
		for _, op := range res.Summary.Operations {
			if op.Name == "total" {
				t.Logf("load: %d requests, %d errors", op.Count, op.Errors)
			}
		}
	}
	t.Logf("hop1's CPU utilization up to %d%% of its request, HPA's desired replicas up to %d (first above 1 %s after the load began), up to %d hop1 pods running",
		maxUtil, maxDesired, firstScaled.Round(time.Second), maxRunning)
	if maxUtil <= cpuTarget {
		t.Errorf("hop1's CPU utilization never above the %d%% target (at most %d%%)", cpuTarget, maxUtil)
	}
	if maxDesired < 2 {
		t.Errorf("the HPA never asked for more than %d replicas", maxDesired)
	}
	if maxRunning < 2 {
		t.Errorf("at most %d hop1 pods ran", maxRunning)
	}
	// The metrics are the real kubelet's: the only node is the real one.
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	nm, err := dyn.Resource(schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "nodes"}).List(ctx, metav1.ListOptions{})
	if err != nil || len(nm.Items) != 1 || nm.Items[0].GetName() != kubetest.NodeName {
		t.Errorf("node metrics: %v, %d nodes; want the one real node %s", err, len(nm.Items), kubetest.NodeName)
	}
}
