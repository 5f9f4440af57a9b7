package kube

import (
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

// TestRenderHostsPlaceGroups: each [deploy.hosts] table's groups select
// nodes labelled with the host's name, beside deploy.kube.node_selector;
// a group no host lists, and the load pods, select only the latter.
func TestRenderHostsPlaceGroups(t *testing.T) {
	src := chainSplit + withLoad + `
[deploy.kube.node_selector]
pool = "lab"
[deploy.hosts.vm1]
groups = ["hop1"]
[deploy.hosts.vm2]
groups = ["hop2"]
`
	objs := render(t, src, RenderOptions{})
	deps := find[*appsv1.Deployment](objs)
	for name, want := range map[string]map[string]string{
		"hop1": {"pool": "lab", LabelHost: "vm1"},
		"hop2": {"pool": "lab", LabelHost: "vm2"},
		"hop3": {"pool": "lab"},
	} {
		if got := deps[name].Spec.Template.Spec.NodeSelector; !maps.Equal(got, want) {
			t.Errorf("%s: node selector %v, want %v", name, got, want)
		}
	}
	job := find[*batchv1.Job](objs)[LoadJob]
	if got, want := job.Spec.Template.Spec.NodeSelector, map[string]string{"pool": "lab"}; !maps.Equal(got, want) {
		t.Errorf("load Job: node selector %v, want %v", got, want)
	}
}

func TestRenderHostsErrors(t *testing.T) {
	for _, tt := range []struct {
		name, extra, want string
	}{
		{"unknown group", "[deploy.hosts.vm1]\ngroups = [\"hop9\"]\n",
			`k.toml:9: deploy.hosts.vm1.groups: placement split has no group "hop9" (its groups: hop1, hop2, hop3)`},
		{"group on two hosts", "[deploy.hosts.vm1]\ngroups = [\"hop1\"]\n[deploy.hosts.vm2]\ngroups = [\"hop2\", \"hop1\"]\n",
			`k.toml:11: deploy.hosts.vm2.groups: group "hop1" is on two hosts, vm1 and vm2`},
		{"host not a label value", "[deploy.hosts.\"vm 1\"]\ngroups = [\"hop1\"]\n",
			`deploy.hosts."vm 1": host "vm 1" cannot be the value of the node label svclab.dev/host`},
		{"selector sets the host label", "[deploy.kube.node_selector]\n\"svclab.dev/host\" = \"x\"\n[deploy.hosts.vm1]\ngroups = [\"hop1\"]\n",
			`deploy.kube.node_selector."svclab.dev/host": svclab.dev/host places the groups of [deploy.hosts]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, topo := resolve(t, chainSplit+tt.extra)
			if _, err := Render(s, topo, RenderOptions{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
