package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/runtime"
)

// TestFailingPods: a design point whose pods cannot start, as kwok's
// stages for the harness's fault images make them (kubetest.stages.yaml),
// fails within deploy.start_timeout with a reason that names the
// Deployment, its pod and the cluster's reason; its namespace is gone
// after the failure. The two cases run together: each is mostly waiting
// (the timeout, then the namespace's deletion).
// It runs alone, before the parallel tests start (no t.Parallel): it
// checks that the cluster holds no svclab namespace at its end.
func TestFailingPods(t *testing.T) {
	c := kubetest.Get(t)
	t.Setenv("KUBECONFIG", c.Kubeconfig)
	t.Run("group", func(t *testing.T) { failingPods(t, c) })
	list, err := c.Client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range list.Items {
		t.Errorf("namespace %s left after the failed deploys (%s)", ns.Name, ns.Status.Phase)
	}
}

func failingPods(t *testing.T, c *kubetest.Cluster) {
	for _, tc := range []struct {
		name, image string
		want        []string
	}{
		{"ImagePullBackOff", kubetest.UnpullableImage, []string{
			"container host: ImagePullBackOff: Back-off pulling image \"" + kubetest.UnpullableImage + "\"",
			"Failed: Failed to pull image",
		}},
		{"NeverReady", kubetest.NeverReadyImage, []string{
			"container host running but never ready: its readiness probe has not passed",
			"Unhealthy: Readiness probe failed",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topo := design(t, c, "8s", "")
			s, err := topo.Spec.With(map[string]any{"deploy.kube.image": tc.image})
			if err != nil {
				t.Fatal(err)
			}
			if topo, err = runtime.Resolve(s); err != nil {
				t.Fatal(err)
			}
			d, _ := deploy.Lookup(kube.Name)
			start := time.Now()
			_, err = d.Deploy(context.Background(), topo, deploy.Options{})
			took := time.Since(start)
			if err == nil {
				t.Fatalf("deploy of %s worked", tc.image)
			}
			t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
			msg := err.Error()
			// Every group's Deployment is named with one of its pods.
			want := append([]string{"within 8s (deploy.start_timeout)",
				"deployment hop1: 0 of 1 replicas available (pod hop1-",
				"deployment hop2: 0 of 2 replicas available (pod hop2-",
				"deployment hop3: 0 of 1 replicas available (pod hop3-",
			}, tc.want...)
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q", w)
				}
			}
			// 8 s, then the namespace's deletion: bounded as Stop is.
			if took > 8*time.Second+2*time.Minute {
				t.Errorf("failed after %s; start_timeout 8s", took)
			}
		})
	}
}
