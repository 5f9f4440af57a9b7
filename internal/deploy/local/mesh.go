package local

import (
	"context"
	"fmt"
	"net"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/hostmesh"
	"github.com/svclab/svclab/internal/deploy/telemetry"
	"github.com/svclab/svclab/internal/pki"
	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// The deployment's side of its mesh (internal/deploy/hostmesh): each
// replica's metrics listener, bound with its other sockets, and the scrape
// targets that follow the live replicas (pushScrapeTargets, from
// pushPeers), where the victims of a scale down linger until their last
// scrape (lastScrape).

// newMesh makes the mesh of the deployment's topology (started within
// ctx); nil when it turns on no mesh feature. On error the caller's Stop
// cleans up.
func (d *Deployment) newMesh(ctx context.Context) (*hostmesh.Mesh, error) {
	return hostmesh.New(ctx, hostmesh.Config{
		ID: d.id, Dir: d.dir, Topology: d.topo,
		TelemetryCPUs: d.opts.TelemetryCPUs, CPUs: d.cpus, Spawn: d.spawn.do, Proc: d.proc,
		Logf: d.logf,
	})
}

// meshAfterBind gives each of the first replicas its metrics listener and
// starts the Prometheus that scrapes them (within ctx), for
// deploy.metrics. Replicas added later get theirs in scaleUp, and
// pushPeers points Prometheus at them.
func (d *Deployment) meshAfterBind(ctx context.Context, ss []*sockets) error {
	if !d.mesh.Metrics() {
		return nil
	}
	var targets []telemetry.Target
	for _, s := range ss {
		if err := d.bindMetrics(s); err != nil {
			return fmt.Errorf("deployment %s: %w", d.id, err)
		}
		targets = append(targets, telemetry.Target{Addr: s.metrics.GetEndpoint().GetAddr(), Process: d.replicaName(s.group, s.ordinal)})
	}
	return d.mesh.Telemetry().StartMetrics(ctx, targets)
}

// bindMetrics makes the metrics listener of the replica whose sockets are
// s, with deploy.metrics: among its inherited sockets, or an address for a
// Java or Python host, which binds its own listeners (sockets.byAddress).
func (d *Deployment) bindMetrics(s *sockets) error {
	if !d.mesh.Metrics() {
		return nil
	}
	ep := runtime.Endpoint{Transport: "http", Network: "tcp"}
	var err error
	if d.topo.GroupLanguage(s.group) != runtime.LangGo {
		s.metrics, err = s.byAddress(ep)
	} else if lis, lerr := net.Listen("tcp", "127.0.0.1:0"); lerr != nil {
		err = fmt.Errorf("listen: %w", lerr)
	} else {
		s.metrics, err = s.inherit(lis, ep)
	}
	if err != nil {
		return fmt.Errorf("deploy.metrics: %w", err)
	}
	return nil
}

// scrapeTargets are the metrics listeners of the live processes, and of
// the victims that linger.
func (d *Deployment) scrapeTargets() []telemetry.Target {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []telemetry.Target
	for _, p := range d.processes {
		if p.metrics != "" && !p.exited() && (!p.retired.Load() || d.mesh.Lingers(p.metrics)) {
			out = append(out, telemetry.Target{Addr: p.metrics, Process: p.info.Name})
		}
	}
	return out
}

// pushScrapeTargets points Prometheus at the live processes.
func (d *Deployment) pushScrapeTargets() error {
	if !d.mesh.Telemetry().Metrics() {
		return nil
	}
	return d.mesh.Telemetry().SetTargets(d.scrapeTargets())
}

// victims are procs as the mesh's lingering sees them.
func (d *Deployment) victims(procs []*process) []hostmesh.Victim {
	out := make([]hostmesh.Victim, len(procs))
	for i, p := range procs {
		out[i] = hostmesh.Victim{Name: p.info.Name, Metrics: p.metrics, Exited: p.exited, Drain: func(ctx context.Context) error {
			return d.controlProcess(p, func(cc hostv1.ControlClient) error {
				_, err := cc.Drain(ctx, &hostv1.DrainRequest{})
				return err
			})
		}}
	}
	return out
}

// lastScrape drains the victims and waits for their last scrape
// (hostmesh.LastScrape); then it drops them from the targets.
func (d *Deployment) lastScrape(ctx context.Context, victims []*process) {
	d.mesh.LastScrape(ctx, d.victims(victims), d.stopTimeout, func() {
		d.pushMu.Lock() // one writer of the targets file at a time
		defer d.pushMu.Unlock()
		if err := d.pushScrapeTargets(); err != nil {
			d.logf("deployment %s: %v", d.id, err)
		}
	})
}

// ClientFiles are the credentials of hostmesh.ClientIdentity, for tools
// such as curl and openssl s_client to call a deployment with deploy.mtls
// (false without it). They are deleted when the deployment stops.
func (d *Deployment) ClientFiles() (pki.Files, bool) { return d.mesh.ClientFiles() }

// Series returns every sample the deployment's Prometheus scraped (a
// deploy.MetricSource), once the deployment has stopped.
func (d *Deployment) Series() ([]deploy.Sample, error) { return d.mesh.Telemetry().Series() }

// Spans returns every span the deployment's Jaeger received (a
// deploy.TraceSource), once the deployment has stopped.
func (d *Deployment) Spans() ([]deploy.Span, error) { return d.mesh.Telemetry().Spans() }

// TelemetryProcesses lists the deployment's telemetry programs that are
// running, as processes of role telemetry (a deploy.TelemetrySource).
func (d *Deployment) TelemetryProcesses() []deploy.TelemetryProcess {
	return d.mesh.Telemetry().Processes()
}

// MeshLines says where the mesh features of the deployment can be seen, for
// `svclab up` (a deploy.MeshDescriber).
func (d *Deployment) MeshLines() []string {
	var out []string
	if d.sidecars != nil {
		out = append(out, fmt.Sprintf("proxies: the entry above is %s's proxy, as the load generator calls it; the gateway calls %s in its own process, past its proxy", d.topo.Entry, d.topo.Entry))
	}
	return append(out, d.mesh.Lines()...)
}
