package local

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/proxies"
	"github.com/svclab/svclab/internal/runtime"
)

// The deployment's side of its sidecar and node proxies, which
// internal/deploy/proxies lays out, configures and keeps following the
// replicas: here they become processes of the deployment (launchProxy),
// and a replica scaled away stops its sidecar (stopSidecarOf).

// layOutSidecars lays out the proxies of the topology, if it has any, and
// points the entry at the entry component's inbound listener. The hosts'
// peers follow from it in hostConfig (proxies.Route).
func (d *Deployment) layOutSidecars(all []*sockets) error {
	cfg := proxies.Config[*process]{
		ID: d.id, Dir: d.dir, Topology: d.topo, Env: d.opts.Env, CPUs: d.cpus,
		Trace:      d.mesh.Telemetry().TraceProxy,
		Live:       d.liveOrdinals,
		HostCgroup: d.hostCgroup,
		Launch:     d.launchProxy,
		Logf:       d.logf,
	}
	if d.mesh.MTLS() {
		cfg.Credentials = d.mesh.Credentials
	}
	appAddr := func(g int, c string) []string {
		var ss []*sockets
		for _, s := range all {
			if s.group == g {
				ss = append(ss, s)
			}
		}
		slices.SortFunc(ss, func(a, b *sockets) int { return a.ordinal - b.ordinal })
		var out []string
		for _, s := range ss {
			out = append(out, s.listen[c].GetEndpoint().GetAddr())
		}
		return out
	}
	m, err := proxies.New(cfg, appAddr)
	if err != nil || m == nil {
		return err
	}
	d.sidecars = m
	if !d.topo.InProcess() {
		d.entry = runtime.Endpoint{Transport: d.topo.Transport, Network: "tcp", Addr: m.Entry()}
	}
	return nil
}

// startSidecars starts the proxies laid out, as processes of the
// deployment.
func (d *Deployment) startSidecars() error {
	started, err := d.sidecars.StartAll()
	d.mu.Lock()
	d.processes = append(d.processes, started...)
	d.mu.Unlock()
	return err
}

// liveOrdinals are the ordinals of group g's live replicas.
func (d *Deployment) liveOrdinals(g int) []int {
	var out []int
	for _, p := range d.live(g) {
		out = append(out, p.ordinal)
	}
	return out
}

// hostCgroup is the cgroup of replica r of group g's host, which its
// sidecar joins (nil if it has none).
func (d *Deployment) hostCgroup(g, r int) *cgroup.Group {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.processes {
		if p.group == g && p.ordinal == r && p.info.Role == deploy.RoleHost && p.cg != nil {
			return p.cg
		}
	}
	return nil
}

// plaintextBehindSidecar reports whether p is a host whose listeners
// serve only its own sidecar, in plaintext on loopback, while the sidecars
// carry mTLS.
func (d *Deployment) plaintextBehindSidecar(p *process) bool {
	return d.sidecars != nil && p.info.Role == deploy.RoleHost
}

// launchProxy starts a proxy program as a child of the deployment, as
// start does a host (launch), with the parent-death signal l.DeathSignal
// (sidecar.DeathSignal). It belongs to no group's replicas (group -1), so
// scaling and endpoint pushes never count it.
func (d *Deployment) launchProxy(l proxies.Launch) (*process, error) {
	proc := &process{group: -1, ordinal: l.Replica, info: l.Info, listen: l.Listen}
	// A proxy program cannot join a group itself, as a host does before
	// it runs anything: it is moved in (all its threads) as soon as it
	// exists, before it has read its configuration.
	c := launchOpts{start: l.Cmd.Start, deathsig: l.DeathSignal, cg: l.Cgroup, ownCg: l.OwnCgroup, tree: l.Forks}
	if err := d.launch(l.Cmd, c, proc); err != nil {
		return nil, err
	}
	return proc, nil
}

// stopSidecarOf stops the sidecar of a replica scaled away, once the
// replica has stopped and before its cgroup, which the sidecar shares, is
// removed: SIGTERM, and SIGKILL after the stop timeout.
func (d *Deployment) stopSidecarOf(ctx context.Context, host *process) error {
	p, ok := d.sidecars.Remove(host.group, host.ordinal)
	if !ok || p == nil {
		return nil
	}
	p.retired.Store(true)
	signalGroup(p, syscall.SIGTERM)
	var err error
	sctx, cancel := context.WithTimeout(ctx, d.stopTimeout)
	defer cancel()
	select {
	case <-p.done:
	case <-sctx.Done():
		signalGroup(p, syscall.SIGKILL)
		<-p.done
		err = fmt.Errorf("%s: did not stop within %s and was killed", p.info, d.stopTimeout)
	}
	d.mu.Lock()
	d.processes = slices.DeleteFunc(d.processes, func(q *process) bool { return q == p })
	d.mu.Unlock()
	return errors.Join(err, p.removeCgroup())
}
