package kube

import (
	"errors"
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
	// The hosts as far as they decoded: deploy.Resolve reports the
	// mistakes of their keys, and these are reported beside them.
	hosts, err := deploy.MachinesOf(s)
	if len(hosts) == 0 {
		return out, err
	}
	var errs []error
	if _, ok := r.keys.NodeSelector[LabelHost]; ok {
		errs = append(errs, s.Errorf("deploy.kube.node_selector."+`"`+LabelHost+`"`, "%s places the groups of [deploy.hosts]; leave it out of deploy.kube.node_selector", LabelHost))
	}
	index := map[string]int{}
	var names []string
	for i, g := range topo.Groups {
		index[g.Name] = i
		names = append(names, g.Name)
	}
	// File order, so the first mistake reported is the first written.
	for _, h := range deploy.MachineNames(s, hosts) {
		if msgs := validation.IsValidLabelValue(h); len(msgs) > 0 {
			errs = append(errs, s.NameErrorf(deploy.MachineKey(h, ""), "host %q cannot be the value of the node label %s: %s", h, LabelHost, strings.Join(msgs, "; ")))
			continue
		}
		for _, g := range hosts[h].Groups {
			i, ok := index[g]
			switch {
			case !ok:
				errs = append(errs, s.Errorf(deploy.MachineKey(h, "groups"), "placement %s has no group %q (its groups: %s)", topo.Placement, g, strings.Join(names, ", ")))
			case out[i] != "":
				errs = append(errs, s.Errorf(deploy.MachineKey(h, "groups"), "group %q is on two hosts, %s and %s; a group runs on one", g, out[i], h))
			default:
				out[i] = h
			}
		}
	}
	return out, errors.Join(append(errs, err)...)
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
