package deploy

import "github.com/svclab/svclab/internal/runtime"

// Killer is a Deployment one of whose processes [deploy.faults.kill] can
// end: at once, with SIGKILL, as a crash would. The deployer then takes it
// out of its callers' endpoint sets, as it does a replica that crashes,
// but neither reports it on Exited nor lists it in Processes: it was meant
// to die, and is no failure of the run.
type Killer interface {
	// Kill kills the replica-th process (in start order) of group.
	Kill(group, replica int) (ProcessInfo, error)
}

// HopFaulter is a Deployment that can make a fault of [deploy.faults]
// (latency_spike, reset, link_cut) act on the hop into a group: every
// connection another group opens to f.Group's processes.
type HopFaulter interface {
	// StartFault makes f act until stop is called.
	StartFault(f runtime.Fault) (stop func() error, err error)
}
