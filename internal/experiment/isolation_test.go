package experiment

import (
	"bytes"
	"errors"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/spec"
)

func TestDecideIsolation(t *testing.T) {
	cpus, err := cgroup.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	_, cgErr := cgroup.Detect()
	for _, c := range []struct {
		name, isolation string
	}{{"left out", ""}, {"cpuset", `isolation = "cpuset"`}, {"none", `isolation = "none"`}} {
		t.Run(c.name, func(t *testing.T) {
			s, err := spec.Parse("i.toml", []byte("[app]\nname = \"chain\"\n[experiment]\n"+c.isolation+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			iso, err := DecideIsolation(s, &log)
			canSplit := cgErr == nil && len(cpus) >= 2
			switch {
			case c.name == "none" || (c.name == "left out" && !canSplit):
				if err != nil || iso.Mode != "none" || iso.LoadgenCPUs != cgroup.List(cpus) || iso.SUTCores != len(cpus) {
					t.Errorf("got %+v, %v; want none over %v", iso, err, cpus)
				}
				if c.name == "left out" && !strings.Contains(log.String(), "notice") {
					t.Errorf("no notice on falling back to none: %q", log.String())
				}
			case !canSplit: // "cpuset" written where it cannot be had
				var se *spec.Error
				if !errors.As(err, &se) || se.Key != "experiment.isolation" || se.Line != 4 {
					t.Errorf("got %v, want an error at experiment.isolation, line 4", err)
				}
			default:
				gen, sut, _ := cgroup.Split(cpus)
				if err != nil || iso.Mode != "cpuset" || iso.LoadgenCPUs != cgroup.List(gen) || iso.SUTCPUs != cgroup.List(sut) ||
					iso.LoadgenCores+iso.SUTCores != len(cpus) {
					t.Errorf("got %+v, %v; want cpuset %v | %v", iso, err, gen, sut)
				}
				if !strings.Contains(log.String(), "isolation: the load generator runs on CPU "+cgroup.List(gen)) {
					t.Errorf("no isolation line: %q", log.String())
				}
			}
		})
	}
}

// TestIsolationEnter: under cpuset the calling process runs on the
// generator's CPUs until it leaves, and the group is gone after.
func TestIsolationEnter(t *testing.T) {
	s, _ := spec.Parse("i.toml", []byte("[app]\nname = \"chain\"\n"))
	iso, err := DecideIsolation(s, &bytes.Buffer{})
	if err != nil || iso.Mode != "cpuset" {
		t.Skipf("no cpuset isolation here: %+v, %v", iso, err)
	}
	before, _ := cgroup.Allowed()
	leave, err := iso.Enter()
	if err != nil {
		t.Fatal(err)
	}
	during, _ := cgroup.Allowed()
	if got := goruntime.GOMAXPROCS(0); got != iso.LoadgenCores {
		t.Errorf("GOMAXPROCS %d inside the generator's cpuset, want its %d cores", got, iso.LoadgenCores)
	}
	if err := leave(); err != nil {
		t.Fatal(err)
	}
	after, _ := cgroup.Allowed()
	if cgroup.List(during) != iso.LoadgenCPUs || cgroup.List(after) != cgroup.List(before) {
		t.Errorf("CPUs before %v, during %v (want %s), after %v", before, during, iso.LoadgenCPUs, after)
	}
	_ = cgroup.RemoveOwn()
}
