package kubetest

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestPodRunsOnFakeNode: the scheduler places a pod on a kwok node and kwok
// marks it Running, which is all the kube deployer's tests rely on.
func TestPodRunsOnFakeNode(t *testing.T) {
	c := Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubetest-"}}
	ns, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{
			Containers:   []corev1.Container{{Name: "c", Image: "example.invalid/none:1"}},
			NodeSelector: map[string]string{"svclab.dev/kubetest-node": "1"},
		},
	}
	// The namespace's default service account comes from the controller
	// manager a moment after the namespace; admission refuses pods until then.
	for {
		_, err = c.Client.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := c.Client.CoreV1().Pods(ns.Name).Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod not Running on %s: %v", c.Nodes[1], err)
		}
		if p.Status.Phase == corev1.PodRunning {
			if p.Spec.NodeName != c.Nodes[1] {
				t.Fatalf("pod on %q, want %q (its node selector)", p.Spec.NodeName, c.Nodes[1])
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestNoRBACForbidden: the kubeconfig's second user is refused.
func TestNoRBACForbidden(t *testing.T) {
	c := Get(t)
	cs := c.ClientFor(t, NoRBACContext)
	_, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err == nil {
		t.Fatal("listing namespaces as the user without RBAC worked")
	}
	if want := "forbidden"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

// TestStopLeavesNothing: a second cluster's processes and files are gone
// after Stop.
func TestStopLeavesNothing(t *testing.T) {
	Get(t)
	c, err := Start(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	pids, dir := c.PIDs(), c.Dir
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still runs after Stop", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after Stop (%v)", dir, err)
	}
}
