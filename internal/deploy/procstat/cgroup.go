package procstat

import (
	"context"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
)

// CgroupSource adds a process's control-group counters (throttling,
// memory charged) to its /proc ones, for a process that has a group of
// its own (deploy.resources, experiment.isolation).
type CgroupSource struct {
	Proc  deploy.ResourceSource
	Group *cgroup.Group
}

// Sample reads the process's counters, then its group's.
func (s CgroupSource) Sample(ctx context.Context) (deploy.Usage, error) {
	u, err := s.Proc.Sample(ctx)
	if err != nil {
		return u, err
	}
	if st, err := s.Group.Stats(); err == nil {
		u.Cgroup = &st
	}
	return u, nil
}
