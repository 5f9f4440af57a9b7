package e2e

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
)

// labelNode sets (value != "") or removes (value == "") one label of a
// node, with a merge patch.
func labelNode(t *testing.T, c *kubetest.Cluster, node, key, value string) {
	t.Helper()
	var v any
	if value != "" {
		v = value
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	if _, err := c.Client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("label node %s %s=%q: %v", node, key, value, err)
	}
}

// TestHostsPlaceGroupsOnNodes: study S0's two machines as two nodes.
// With the nodes labelled svclab.dev/host=vm1 and vm2, each group's pods
// run on the node of the [deploy.hosts] table that lists it, whatever
// the scheduler would have preferred.
func TestHostsPlaceGroupsOnNodes(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	hosts := map[string]string{"vm1": c.Nodes[0], "vm2": c.Nodes[1]}
	for h, n := range hosts {
		labelNode(t, c, n, kube.LabelHost, h)
		defer labelNode(t, c, n, kube.LabelHost, "")
	}
	// hop1 alone on vm1; hop2 (two replicas) and hop3 on vm2, so that
	// spreading, the scheduler's own preference, would put one elsewhere.
	topo := design(t, c, "60s", `
[deploy.hosts.vm1]
groups = ["hop1"]
[deploy.hosts.vm2]
groups = ["hop2", "hop3"]
`)
	d, err := deploy.Lookup(kube.Name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	defer dep.Stop(ctx)
	ns := dep.(*kube.Deployment).Namespace()
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRole + "=" + kube.RoleHost})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"hop1": hosts["vm1"], "hop2": hosts["vm2"], "hop3": hosts["vm2"]}
	perGroup := map[string]int{}
	for _, p := range pods.Items {
		g := p.Labels[kube.LabelGroup]
		perGroup[g]++
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s (%s) is %s after Deploy", p.Name, g, p.Status.Phase)
		}
		if p.Spec.NodeName != want[g] {
			t.Errorf("pod %s of group %s on node %q, want %q", p.Name, g, p.Spec.NodeName, want[g])
		}
	}
	if perGroup["hop1"] != 1 || perGroup["hop2"] != 2 || perGroup["hop3"] != 1 {
		t.Errorf("pods per group %v, want hop1 1, hop2 2, hop3 1", perGroup)
	}
	if err := dep.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	namespaceGone(t, c, ns)
}
