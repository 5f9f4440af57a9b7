package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// TestProxiesInCgroups: under [deploy.resources] and the deployment's CPUs
// (experiment.isolation), a sidecar runs in its host's own group, every
// thread of it, so the two share the component's quota and memory limit,
// as a pod's containers do; a node proxy runs in a group of its own with
// the CPUs and no limit. The proxies' groups go with the deployment.
func TestProxiesInCgroups(t *testing.T) {
	t.Parallel()
	m := needCgroups(t)
	if m.Version() != cgroup.V1 {
		t.Skip("the paths checked are cgroup v1's; this machine has v2")
	}
	proxyOrSkip(t, spec.SidecarEnvoy)
	cpus, err := cgroup.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	last := strconv.Itoa(cpus[len(cpus)-1])
	for _, mode := range []string{"sidecar", "node"} {
		t.Run(mode, func(t *testing.T) {
			topo := resolve(t, fmt.Sprintf(`[app]
name = "chain"
[deploy]
placement = "split"
sidecar = "envoy"
proxy_mode = %q
[deploy.resources.hop1]
cpu = 0.5
memory = "256MiB"
`, mode))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			d, err := localDeployer(t).Deploy(ctx, topo, deploy.Options{CPUs: last})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Stop(context.Background())
			hosts := map[string]int{}
			var proxies []deploy.ProcessInfo
			for _, p := range d.Processes() {
				if info := p.Info(); info.Role == deploy.RoleHost {
					hosts[info.Group] = info.PID
				} else {
					proxies = append(proxies, info)
				}
			}
			if len(proxies) == 0 {
				t.Fatal("no proxy process")
			}
			var dirs []string
			for _, px := range proxies {
				threads, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(px.PID), "task"))
				if err != nil {
					t.Fatal(err)
				}
				if len(threads) < 2 {
					t.Errorf("%s has %d thread(s); Envoy runs workers", px, len(threads))
				}
				for _, th := range threads {
					tid, _ := strconv.Atoi(th.Name())
					for _, ctl := range []string{"memory", "cpu", "cpuset"} {
						got := procCgroup(t, tid, ctl)
						want := "/" + d.ID() + "-node.envoy"
						if px.Role == deploy.RoleSidecar {
							want = procCgroup(t, hosts[px.Group], ctl)
						}
						if filepath.Base(got) != filepath.Base(want) {
							t.Errorf("%s thread %d: %s cgroup %s, want %s", px, tid, ctl, got, want)
						}
					}
				}
				mem := filepath.Join(cgroup.Root, "memory", procCgroup(t, px.PID, "memory"))
				cpu := filepath.Join(cgroup.Root, "cpu", procCgroup(t, px.PID, "cpu"))
				set := filepath.Join(cgroup.Root, "cpuset", procCgroup(t, px.PID, "cpuset"))
				dirs = append(dirs, mem, cpu, set)
				if got := readTrim(t, filepath.Join(set, "cpuset.cpus")); got != last {
					t.Errorf("%s: cpuset.cpus = %s, want %s", px, got, last)
				}
				wantQuota := "-1"
				if px.Group == "hop1" {
					wantQuota = "50000" // hop1's, shared with its host
					if got := readTrim(t, filepath.Join(mem, "memory.limit_in_bytes")); got != strconv.Itoa(256<<20) {
						t.Errorf("%s: memory.limit_in_bytes = %s, want hop1's", px, got)
					}
				}
				if got := readTrim(t, filepath.Join(cpu, "cpu.cfs_quota_us")); got != wantQuota {
					t.Errorf("%s: cpu.cfs_quota_us = %s, want %s", px, got, wantQuota)
				}
				if px.Limits == nil || px.Limits.CPUs != last {
					t.Errorf("%s reports limits %+v", px, px.Limits)
				}
			}
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			for _, dir := range dirs {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("cgroup %s is still there after stop: %v", dir, err)
				}
			}
		})
	}
}
