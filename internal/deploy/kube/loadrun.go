package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/tempdir"
	"github.com/svclab/svclab/internal/warn"
)

// Capabilities are what a cluster's deployment can do: it runs the load as
// a Job, and its pods' usage comes from the metrics API (resources.go).
func (dep *Deployment) Capabilities() deploy.Capabilities {
	return deploy.Capabilities{Load: dep, Resources: dep}
}

// RunLoad implements deploy.LoadRunner (Capabilities.Load): it creates the load Job (its
// deploy.kube.generators pods start together, each running its shard of
// the [load] table Render put in LoadConfigMap), waits for it to complete,
// reads each pod's results from its log (ReadResults) and merges them with
// load.Merge, HdrHistogram's merge. cfg and opts are the runner's; the
// pods run the rendered table, which carries the same warm-up and
// duration.
func (dep *Deployment) RunLoad(ctx context.Context, cfg load.Config, opts load.Options) (*load.Result, error) {
	if dep.loadJob == nil {
		return nil, errors.New("kube: the design point renders no load Job")
	}
	job := dep.loadJob.(*batchv1.Job)
	// The Job's own deadline, and a little for the API to say so.
	limit := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second + time.Minute
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dep.client.Typed.Discovery()))
	if err := dep.applyOne(ctx, mapper, job); err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	n := int(*job.Spec.Completions)
	dep.logf("load Job %s: %d generator pods", job.Name, n)
	if err := dep.waitJob(ctx, job.Name, n); err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	dirs, err := dep.collect(ctx, job.Name, n)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	res, err := load.Merge(dirs...)
	if err != nil {
		return nil, fmt.Errorf("kube: merge the generators' results: %w", err)
	}
	if note := dep.ResourceNote(); note != "" {
		res.Warnings = append(res.Warnings, warn.Warning{Kind: warn.Resources, Text: note})
	}
	return res, nil
}

// waitJob waits until the Job's n pods have all succeeded; a failed pod
// fails the run with its reason.
func (dep *Deployment) waitJob(ctx context.Context, name string, n int) error {
	last := ""
	for {
		j, err := dep.client.Typed.BatchV1().Jobs(dep.ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil && ctx.Err() == nil:
			return apiError(dep.client, "load Job", err)
		case err == nil && int(j.Status.Succeeded) >= n:
			return nil
		case err == nil && (j.Status.Failed > 0 || jobCondition(j, batchv1.JobFailed)):
			return fmt.Errorf("load Job failed (%d of %d generator pods failed)%s", j.Status.Failed, n, dep.reasons(context.Background()))
		case err == nil:
			if s := fmt.Sprintf("%d of %d generator pods running, %d done", j.Status.Active, n, j.Status.Succeeded); s != last {
				dep.logf("load: %s", s)
				last = s
			}
		}
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			return fmt.Errorf("load Job not complete in time (%s)%s", last, dep.reasons(rctx))
		case <-time.After(pollEvery):
		}
	}
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// collect reads each generator pod's log into a directory of its own and
// returns the directories, in shard order.
func (dep *Deployment) collect(ctx context.Context, job string, n int) ([]string, error) {
	pods, err := dep.client.Typed.CoreV1().Pods(dep.ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		return nil, apiError(dep.client, "list the generator pods", err)
	}
	root, err := tempdir.MkdirTemp("kube-load-")
	if err != nil {
		return nil, err
	}
	var dirs []string
	var errs []error
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		log, err := dep.client.Typed.CoreV1().Pods(dep.ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "load"}).DoRaw(ctx)
		if err != nil {
			errs = append(errs, apiError(dep.client, "log of generator pod "+p.Name, err))
			continue
		}
		dir := filepath.Join(root, p.Name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		if _, err := ReadResults(log, dir); err != nil {
			errs = append(errs, fmt.Errorf("generator pod %s: %w", p.Name, err))
			continue
		}
		dirs = append(dirs, dir)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(dirs) != n {
		return nil, fmt.Errorf("results of %d generator pods, want %d", len(dirs), n)
	}
	slices.Sort(dirs)
	return dirs, nil
}
