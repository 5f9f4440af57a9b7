package experiment

import (
	"errors"
	"strings"

	"github.com/svclab/svclab/internal/spec"
)

// needLoad refuses, before anything is planned, a spec that has no [load]
// table and no load.* factor: such a spec (experiments/chain.toml, say)
// describes a deployment for `svclab up`, and checking it as an experiment
// would only report the first load key it lacks.
func needLoad(s *spec.Spec) error {
	if _, ok := s.Lookup("load"); ok {
		return nil
	}
	for _, f := range s.Experiment.Factors {
		if strings.HasPrefix(f.Name, "load.") {
			return nil
		}
	}
	return &spec.Error{File: s.Path, Err: errors.New("the spec has no [load] table, so it can be deployed (svclab up " + s.Path + ") but not run or planned; add a [load] table (docs/LOAD.md), or give one with --set load.rate=100 --set load.duration=10s")}
}
