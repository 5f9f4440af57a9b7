package kube

import (
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// Traits implements deploy.Deployer. The deployer is Remote: the pods run
// PostgreSQL, Redis and Istio's proxies from images, so this machine
// needs none of the programs the local deployers start, and the
// cluster's nodes, not this machine, bound the sizes a spec asks for.
func (Deployer) Traits() deploy.Traits {
	return deploy.Traits{DecodeKeys: decodeKeys, CheckSpec: checkSpec, Remote: true, RunOverhead: runOverhead}
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
	return s.Errorf(first, "the %s deployer cannot inject faults (it neither cuts, delays nor resets a hop, nor kills a pod); leave [deploy.faults] out or use deploy.deployer = \"local\" or \"netns\"", Name)
}

// runOverhead is a run's deployment and teardown beyond the local
// deployer's: on a quiet kwok cluster the apply took 2.9 s to every
// Deployment available and the namespace's deletion 8.5 s, against the
// local deployer's 1.5 s (docs/KUBERNETES.md, the e2e tests' times).
const runOverhead = 10 * time.Second
