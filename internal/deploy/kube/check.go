package kube

import (
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// RunsRemotely implements deploy.Remote: the pods run PostgreSQL, Redis
// and Istio's proxies from images, so this machine needs none of the
// programs the local deployers start.
func (Deployer) RunsRemotely() bool { return true }

// CheckSpec implements deploy.SpecChecker: it refuses [deploy.faults] and
// renders the design point once, so that what only a render finds (a group
// on two hosts, a namespace that is no Kubernetes name) stops `svclab plan`
// and a run before anything starts, and before a kubeconfig is needed.
func (Deployer) CheckSpec(s *spec.Spec, topo *runtime.Topology) error {
	if err := checkFaults(s); err != nil {
		return err
	}
	_, err := Render(s, topo, RenderOptions{})
	return err
}

// checkFaults refuses [deploy.faults]: a fault acts on a hop or kills a
// host through the local deployers' proxies and processes
// (deploy.HopFaulter, deploy.Killer), which a cluster's pods do not have,
// so a run would pass every check and then fail at its first fault
// window. The error names the first fault written.
func checkFaults(s *spec.Spec) error {
	if !s.Deploy.Faults.Any() {
		return nil
	}
	first := ""
	for _, kind := range []string{spec.FaultLatencySpike, spec.FaultReset, spec.FaultLinkCut, spec.FaultKill} {
		key := "deploy.faults." + kind
		if _, ok := s.Lookup(key); !ok {
			continue
		}
		if first == "" || s.Line(key) < s.Line(first) {
			first = key
		}
	}
	if first == "" {
		first = "deploy.faults"
	}
	return s.Errorf(first, "the %s deployer cannot inject faults (it neither cuts, delays nor resets a hop, nor kills a pod); leave [deploy.faults] out or use deploy.deployer = \"local\" or \"netns\"", spec.DeployerKube)
}
