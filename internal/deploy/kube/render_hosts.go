package kube

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/svclab/svclab/internal/deploy"
)

// LabelHost is the node label that places groups: the groups of a
// [deploy.hosts.<name>] table run on nodes labelled svclab.dev/host=<name>
// (`kubectl label node NODE svclab.dev/host=vm1`), so a two-machine
// placement of study S0 puts each group on the machine the spec names, as
// the netns deployer puts it in that host's namespace.
const LabelHost = "svclab.dev/host"

// hostsOf returns, by group index, the name of the host whose table lists
// the group, "" for a group no host lists (it goes where the scheduler
// puts it). Errors name the spec key: a host name that is no label value,
// a group the placement does not have, a group on two hosts, or a
// deploy.kube.node_selector that sets LabelHost itself.
func (r *renderer) hostsOf() ([]string, error) {
	s, topo := r.s, r.topo
	out := make([]string, len(topo.Groups))
	hosts, err := deploy.MachinesOf(s)
	if err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return out, nil
	}
	if _, ok := r.keys.NodeSelector[LabelHost]; ok {
		return nil, s.Errorf("deploy.kube.node_selector."+`"`+LabelHost+`"`, "%s places the groups of [deploy.hosts]; leave it out of deploy.kube.node_selector", LabelHost)
	}
	index := map[string]int{}
	var names []string
	for i, g := range topo.Groups {
		index[g.Name] = i
		names = append(names, g.Name)
	}
	// File order, so the first mistake reported is the first written.
	for _, h := range deploy.MachineNames(s, hosts) {
		if errs := validation.IsValidLabelValue(h); len(errs) > 0 {
			return nil, s.Errorf(deploy.MachineKey(h, ""), "host %q cannot be the value of the node label %s: %s", h, LabelHost, strings.Join(errs, "; "))
		}
		for _, g := range hosts[h].Groups {
			i, ok := index[g]
			if !ok {
				return nil, s.Errorf(deploy.MachineKey(h, "groups"), "placement %s has no group %q (its groups: %s)", topo.Placement, g, strings.Join(names, ", "))
			}
			if out[i] != "" {
				return nil, s.Errorf(deploy.MachineKey(h, "groups"), "group %q is on two hosts, %s and %s; a group runs on one", g, out[i], h)
			}
			out[i] = h
		}
	}
	return out, nil
}

// groupNodeSelector is group g's pods' node selector: the run's
// deploy.kube.node_selector, and its host's label when a host lists it.
func (r *renderer) groupNodeSelector(g int) map[string]string {
	sel := r.nodeSelector()
	if h := r.hostOf[g]; h != "" {
		if sel == nil {
			sel = map[string]string{}
		}
		sel[LabelHost] = h
	}
	return sel
}
