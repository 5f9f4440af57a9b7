package realnode

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/tempdir"
)

// childEnv makes the test binary a harness that starts the real node,
// runs a pod on it, says so and waits to be killed (killedChild).
const childEnv = "SVCLAB_REALNODE_KILLED_CHILD"

// killedChild is the harness testStopAndKillLeaveNothing kills with -9.
func killedChild() int {
	ctx := context.Background()
	c, err := kubetest.Start(ctx, 0, kubetest.Options{Node: true, NoMetrics: true, SandboxImageOnly: true, NodeWait: 10 * time.Minute})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "pause", Image: kubetest.PauseImage, ImagePullPolicy: corev1.PullNever,
		}}},
	}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	for {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "left", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Println("running")
	select {}
}

// testStopAndKillLeaveNothing runs last: the shared node's stop leaves
// no process, mount, network namespace, iptables rule, bridge or cgroup
// (kubetest.NodeLeftovers); then a harness with a pod running is killed
// with -9, which leaves them all, and the sweep that `make cluster-stop`
// and the next start run removes them.
func testStopAndKillLeaveNothing(t *testing.T, c *kubetest.Cluster) {
	// Another package's real-node tests may wait for the node (one machine
	// runs one): this test takes the node's lock whenever a node it ended
	// lets it go, so that it looks at the machine before another start.
	locked := waitNodeLock(t)
	start := time.Now()
	if err := c.Stop(); err != nil { // it checks kubetest.NodeLeftovers
		t.Fatalf("stop: %v", err)
	}
	t.Logf("the node stopped in %s", time.Since(start).Round(time.Millisecond))
	lock := locked()
	if left := kubetest.NodeLeftovers(); len(left) > 0 {
		lock.Release()
		t.Fatalf("left after the stop:\n  %s", strings.Join(left, "\n  "))
	}
	// The kubelet changes kernel.panic and others; the stop put them
	// back, and the sweep after the kill must too.
	before := kubetest.Sysctls()
	lock.Release()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "running" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the harness to kill: %q", line)
	}
	locked = waitNodeLock(t)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	lock = locked()
	defer lock.Release()
	left := kubetest.NodeLeftovers()
	t.Logf("left by the killed harness:\n  %s", strings.Join(left, "\n  "))
	for _, want := range []string{"process", "mount", "cgroup", "link", "iptables-save chain", "sysctls not restored"} {
		if !strings.Contains(strings.Join(left, "\n"), want) {
			t.Errorf("nothing of kind %q left by the killed harness: the sweep below shows nothing", want)
		}
	}
	// Its temp root too: etcd's data, the cluster's keys, the kubeconfig.
	tempRoots := func() []string {
		m, _ := filepath.Glob(filepath.Join(os.TempDir(), tempdir.Prefix+strconv.Itoa(cmd.Process.Pid)+"-*"))
		return m
	}
	if len(tempRoots()) == 0 {
		t.Errorf("no temp root of the killed harness (pid %d) in %s: the check after the sweep shows nothing", cmd.Process.Pid, os.TempDir())
	}
	start = time.Now()
	if err := lock.Sweep(); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	t.Logf("swept in %s", time.Since(start).Round(time.Millisecond))
	if left := kubetest.NodeLeftovers(); len(left) > 0 {
		t.Errorf("left after the sweep:\n  %s", strings.Join(left, "\n  "))
	}
	if left := tempRoots(); len(left) > 0 {
		t.Errorf("the killed harness's temp root left after the sweep: %s", strings.Join(left, ", "))
	}
	if after := kubetest.Sysctls(); !maps.Equal(after, before) {
		t.Errorf("sysctls after the sweep %v, want as before the killed harness %v", after, before)
	}
}

// waitNodeLock waits for the node's lock in the background, from now
// (its holder's release hands it over at once), and returns the wait's
// end.
func waitNodeLock(t *testing.T) func() *kubetest.NodeLock {
	t.Helper()
	type result struct {
		l   *kubetest.NodeLock
		err error
	}
	locked := make(chan result, 1)
	waiting := make(chan struct{})
	go func() {
		close(waiting)
		l, err := kubetest.WaitNodeLock()
		locked <- result{l, err}
	}()
	<-waiting
	// The goroutine is in flock(2) within microseconds; a harness
	// polling for the lock tries once a second.
	time.Sleep(50 * time.Millisecond)
	return func() *kubetest.NodeLock {
		t.Helper()
		r := <-locked
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.l
	}
}
