package realnode

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
)

// resourcesSpec limits hop1's group; hop2's has no [deploy.resources].
const resourcesSpec = `
[app]
name = "chain"
hops = 2

[deploy]
deployer = "kube"
transport = "grpc"
placement = "split"
start_timeout = "180s"

[deploy.kube]
image = "` + kubetest.Image + `"

[deploy.resources.hop1]
cpu = 0.5
memory = "96MiB"

[load]
mode = "open"
rate = 10
duration = "1s"
`

// testResourcesInCgroups: [deploy.resources] is enforced by the kubelet:
// the limited group's container gets a CFS quota of half its period and a
// memory limit of 96 MiB in its own cgroup, which runc wrote; the group
// without limits gets neither.
func testResourcesInCgroups(t *testing.T, c *kubetest.Cluster) {
	topo := resolve(t, resourcesSpec)
	d, err := deploy.Lookup(kube.Name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dep, err := d.Deploy(ctx, topo, deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Stop(ctx)
	ns := dep.(*kube.Deployment).Namespace()

	for _, tc := range []struct {
		group          string
		quota, period  string
		memLimitAtMost int64 // bytes; unlimited is the kernel's page-rounded max
		memLimit       string
	}{
		{group: "hop1", quota: "50000", period: "100000", memLimit: "100663296"},
		{group: "hop2", quota: "-1", period: "100000"},
	} {
		pods := podsOf(ctx, t, c, ns, tc.group)
		if len(pods) != 1 {
			t.Fatalf("%s: %d running pods, want 1", tc.group, len(pods))
		}
		cpuDir := containerCgroup(t, "cpu", pods[0])
		memDir := containerCgroup(t, "memory", pods[0])
		t.Logf("%s: %s, %s", tc.group, cpuDir, memDir)
		if got := readFile(t, filepath.Join(cpuDir, "cpu.cfs_quota_us")); got != tc.quota {
			t.Errorf("%s: cpu.cfs_quota_us %s, want %s", tc.group, got, tc.quota)
		}
		if got := readFile(t, filepath.Join(cpuDir, "cpu.cfs_period_us")); got != tc.period {
			t.Errorf("%s: cpu.cfs_period_us %s, want %s", tc.group, got, tc.period)
		}
		got := readFile(t, filepath.Join(memDir, "memory.limit_in_bytes"))
		switch {
		case tc.memLimit != "" && got != tc.memLimit:
			t.Errorf("%s: memory.limit_in_bytes %s, want %s (96 MiB)", tc.group, got, tc.memLimit)
		case tc.memLimit == "" && len(got) < 15: // 9223372036854771712
			t.Errorf("%s: memory.limit_in_bytes %s, want no limit", tc.group, got)
		}
		if tc.memLimit != "" && pods[0].Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("%s: QoS class %s, want Guaranteed (requests = limits)", tc.group, pods[0].Status.QOSClass)
		}
	}
}

// containerCgroup finds a pod's one container's cgroup in a v1
// hierarchy, under the kubelet's cgroup root.
func containerCgroup(t *testing.T, hierarchy string, p corev1.Pod) string {
	t.Helper()
	if len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("%s: %d containers", p.Name, len(p.Status.ContainerStatuses))
	}
	_, id, ok := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	if !ok {
		t.Fatalf("%s: container ID %q", p.Name, p.Status.ContainerStatuses[0].ContainerID)
	}
	root := filepath.Join("/sys/fs/cgroup", hierarchy, kubetest.CgroupRoot)
	var found string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == id {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	if found == "" {
		t.Fatalf("%s: no cgroup %s under %s", p.Name, id, root)
	}
	// The pod's cgroup is named after its UID: the container is the pod's.
	if !strings.Contains(found, strings.ReplaceAll(string(p.UID), "-", "_")) && !strings.Contains(found, string(p.UID)) {
		t.Errorf("%s: cgroup %s is not under the pod's (%s)", p.Name, found, p.UID)
	}
	return found
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
