package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"

	_ "github.com/svclab/svclab/apps/all"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(killedChild())
	}
	os.Exit(kubetest.MainNode(m))
}

// TestRealNode runs the tests of pods on the shared node at once, each
// in namespaces of its own (the node has room for them all, and they
// wait mostly on pods starting and on load that runs at a fixed rate),
// then its stop and kill test, which ends the node and must come last.
func TestRealNode(t *testing.T) {
	c := kubetest.Get(t)
	t.Run("pods", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			test func(*testing.T, *kubetest.Cluster)
		}{
			{"HPAScalesOnKubeletMetrics", testHPAScalesOnKubeletMetrics},
			{"S2ChainRun", testS2ChainRun},
			{"ShopWithPostgres", testShopWithPostgres},
			{"ResourcesInCgroups", testResourcesInCgroups},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.test(t, c)
			})
		}
	})
	t.Run("StopAndKillLeaveNothing", func(t *testing.T) { testStopAndKillLeaveNothing(t, c) })
}

// resolve parses a spec's text and resolves its first design point.
func resolve(t *testing.T, src string) *runtime.Topology {
	t.Helper()
	s, err := spec.Parse(filepath.Join(t.TempDir(), "node.toml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, topo, err := deploy.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// podsOf lists a namespace's running pods of a group.
func podsOf(ctx context.Context, t *testing.T, c *kubetest.Cluster, ns, group string) []corev1.Pod {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "svclab.dev/group=" + group})
	if err != nil {
		t.Fatal(err)
	}
	return running(list.Items)
}

// running are the pods that run and are not being deleted.
func running(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// describe says where a pod is and how it is, for a failing test.
func describe(p corev1.Pod) string {
	return fmt.Sprintf("%s on %s: %s %s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Reason)
}
