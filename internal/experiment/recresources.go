package experiment

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/warn"
)

// ResourcesFile holds every process's CPU and memory, once a second.
const ResourcesFile = "resources.parquet"

// resourceRecorder samples every process of the run once a second, from
// its Start to the end of the measurement: the load generator (this
// process, and its generator processes), the deployment's processes,
// those it adds and its telemetry backends, and what a deployment
// reports itself (deploy.Capabilities.Resources). Each sample goes to the
// stream as a ResourceSample; they are written as resources.parquet, and
// the processes in run.json.
type resourceRecorder struct {
	sampler *ResourceSampler
	file    *RunFile
}

func newResourceRecorder(*Recording) Recorder { return &resourceRecorder{} }

func (r *resourceRecorder) Start(ctx context.Context, rec *Recording) error {
	dep := rec.Deployment
	// The load generator shares the machine with what it measures, so its
	// own CPU is part of the record.
	self, err := procstat.Self()
	if err != nil {
		return err
	}
	sampled := []Sampled{{Process: deploy.ProcessInfo{Name: "loadgen", Role: deploy.RoleLoadGen, PID: os.Getpid(), Limits: rec.Iso.loadgenLimits()}, Source: self}}
	sampled = append(sampled, sampledOf(dep)...)
	if bs := dep.Capabilities().Telemetry; bs != nil {
		for _, b := range bs.TelemetryProcesses() {
			sampled = append(sampled, Sampled{Process: b.Info, Source: b.Source})
		}
	}
	for _, s := range sampled {
		rec.File.Processes = append(rec.File.Processes, s.Process)
	}
	r.file = rec.File
	r.sampler = NewResourceSampler(sampled, time.Second)
	r.sampler.Stream(dep)
	r.sampler.publish = func(p deploy.ProcessInfo, at time.Time, u deploy.Usage) {
		rec.Events.Publish(ResourceSample{Run: rec.Run, At: at, Process: p, Usage: u})
	}
	if autoscaled(dep) || rec.Prepared.Load.GeneratorCount() > 1 {
		r.sampler.Follow(rec.gens.follow(dep, autoscaled(dep)))
	}
	r.sampler.Start(ctx, time.Now().Add(rec.Warmup))
	rec.ending.Go(r.sampler.Wait)
	return nil
}

func (r *resourceRecorder) Finish(end *Ended) ([]warn.Warning, error) {
	r.sampler.Wait() // the recording's context has ended
	r.sampler.SetZero(end.MeasureStart)
	if err := r.sampler.WriteParquet(filepath.Join(end.Dir, ResourcesFile)); err != nil {
		return nil, err
	}
	r.file.Processes = append(r.file.Processes, r.sampler.Joined()...)
	return nil, nil
}
