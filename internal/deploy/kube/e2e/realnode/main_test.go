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
	var out []corev1.Pod
	for _, p := range list.Items {
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
