package spec

import "math"

// checkMesh checks the mesh keys of [deploy]: deploy.mtls and
// deploy.metrics are booleans (Decode checks those), and deploy.tracing is
// a sampling ratio, the share of requests whose traces are kept.
func (s *Spec) checkMesh() error {
	if r := s.Deploy.Tracing; math.IsNaN(r) || r < 0 || r > 1 {
		return s.Errorf("deploy.tracing", "must be a sampling ratio from 0.0 (off) to 1.0 (every request), got %v", r)
	}
	return nil
}
