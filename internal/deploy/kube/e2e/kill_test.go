package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
)

// TestKilledRunCleaned: `svclab run` killed with -9 while its design point
// is deployed leaves its namespace; `svclab clean --kube` deletes it.
func TestKilledRunCleaned(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	bin := kubetest.SvclabBin(t)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "kill.toml")
	src := fmt.Sprintf(baseSpec, "60s", "") + "\n[experiment]\nname = \"kill\"\n"
	// A long measurement, so the kill lands while the run is deployed.
	src = strings.Replace(src, `duration = "1s"`, `duration = "5m"`, 1)
	if err := os.WriteFile(specPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	cmd := exec.Command(bin, "run", "--no-report", "--results", filepath.Join(dir, "results"), specPath)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	ctx := context.Background()
	var ns string
	deadline := time.Now().Add(90 * time.Second)
	for ns == "" {
		list, err := c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
		if err == nil {
			for _, n := range list.Items {
				if f := strings.Fields(n.Annotations[kube.AnnotationOwner]); len(f) == 3 && f[1] == strconv.Itoa(cmd.Process.Pid) {
					ns = n.Name
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("svclab run made no namespace within 90s:\n%s", out.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
	// Deployed: the load Job is the last thing a run makes, after a
	// rollout that may take the spec's whole start_timeout (60s).
	deadline = time.Now().Add(3 * time.Minute)
	for {
		if _, err := c.Client.BatchV1().Jobs(ns).Get(ctx, kube.LoadJob, metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("svclab run started no load Job in %s within 3m:\n%s", ns, out.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s gone before clean (%v): the kill came too late to test anything", ns, err)
	}
	clean := exec.Command(bin, "clean", "--kube")
	clean.Env = env
	cout, err := clean.CombinedOutput()
	if err != nil {
		t.Fatalf("svclab clean --kube: %v\n%s", err, cout)
	}
	if !strings.Contains(string(cout), "removed namespace "+ns) {
		t.Errorf("svclab clean --kube said:\n%s\nwant it to name %s", cout, ns)
	}
	namespaceGone(t, c, ns)
}
