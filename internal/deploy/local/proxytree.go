package local

import "github.com/svclab/svclab/internal/deploy/procstat"

// sampleTree makes proc, a proxy program that forks its workers (nginx's
// master and worker), sampled with its children: the process alone would
// hold only the master's CPU time.
func (d *Deployment) sampleTree(proc *process, forks bool) {
	if !forks {
		return
	}
	tree := d.proc.Tree(proc.info.PID)
	if cs, ok := proc.res.(procstat.CgroupSource); ok {
		cs.Proc = tree
		proc.res = cs
		return
	}
	proc.res = tree
}
