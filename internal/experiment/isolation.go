package experiment

import (
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/cgroup"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/spec"
)

// Isolation is experiment.json's "isolation": which CPUs the load
// generator (the svclab process) and the system under test (every deployed
// process) ran on.
type Isolation struct {
	// Mode is spec.IsolationCPUSet or spec.IsolationNone.
	Mode string `json:"mode"`
	// Reason says why the mode is "none" when the spec left the key out.
	Reason string `json:"reason,omitempty"`
	// LoadgenCPUs and SUTCPUs are CPU lists ("0", "1-3"); under "none"
	// both are every CPU svclab may use, and empty (no cores) where a
	// cluster's pods run the load and the system.
	LoadgenCPUs string `json:"loadgen_cpus"`
	SUTCPUs     string `json:"sut_cpus"`
	// LoadgenCores and SUTCores count them.
	LoadgenCores int `json:"loadgen_cores"`
	SUTCores     int `json:"sut_cores"`
	// Cgroup is the cgroup version in use ("v1", "v2"), empty without.
	Cgroup string `json:"cgroup,omitempty"`

	// loadgen and sut are the groups of Enter, while the generator is in.
	loadgen, sut *cgroup.Group
}

// DecideIsolation checks that the spec's resource limits can be had
// (checkCgroups) and applies experiment.isolation: "cpuset" splits the CPUs
// svclab may use (cgroup.Split); left out, it is "cpuset" where cgroups
// allow it and "none" with a notice on log otherwise; "cpuset" asked for
// where cgroups do not allow it is an error at the key.
func DecideIsolation(s *spec.Spec, log io.Writer) (Isolation, error) {
	traits := deployerTraits(s)
	if traits.Remote {
		// The cluster enforces the limits and runs the load in pods: this
		// machine's cgroups are neither needed nor meaningful, nor are its
		// CPUs what the pods share, even on a one-node cluster here.
		return Isolation{Mode: spec.IsolationNone, Reason: fmt.Sprintf("the %s deployer's pods run where the cluster places them, on its nodes' CPUs, under its limits", s.Deploy.Deployer)}, nil
	}
	cpus, err := cgroup.Allowed()
	if err != nil {
		return Isolation{}, err
	}
	all := Isolation{Mode: spec.IsolationNone, LoadgenCPUs: cgroup.List(cpus), SUTCPUs: cgroup.List(cpus), LoadgenCores: len(cpus), SUTCores: len(cpus)}
	if err := checkCgroups(s); err != nil {
		return Isolation{}, err
	}
	if traits.Unmanaged {
		if s.Experiment.Isolation == spec.IsolationCPUSet {
			return Isolation{}, s.Errorf("experiment.isolation", "%q cannot be had with the %s deployer: it starts no process, so the system under test runs on whatever CPUs its owner gave it; write %q, and pin the system yourself (taskset) if it should not share the generator's CPUs", spec.IsolationCPUSet, s.Deploy.Deployer, spec.IsolationNone)
		}
		all.Reason = fmt.Sprintf("the %s deployer starts no process: the system under test runs on whatever CPUs its owner gave it", s.Deploy.Deployer)
		fmt.Fprintf(log, "notice: the load generator and the system under test share every CPU: %s\n", all.Reason)
		return all, nil
	}
	if s.Experiment.Isolation == spec.IsolationNone {
		return all, nil
	}
	var m *cgroup.Manager
	gen, sut, err := cgroup.Split(cpus)
	if err == nil {
		m, err = cgroup.Open()
	}
	if err != nil {
		if s.Experiment.Isolation == spec.IsolationCPUSet {
			return Isolation{}, s.Errorf("experiment.isolation", "%q cannot be had here: %v; write %q to run without it", spec.IsolationCPUSet, err, spec.IsolationNone)
		}
		all.Reason = err.Error()
		fmt.Fprintf(log, "notice: the load generator and the system under test share every CPU (experiment.isolation = %q): %v\n", spec.IsolationNone, err)
		if telemetryOnGenerator(s) {
			fmt.Fprintf(log, "notice: deploy.telemetry_cpus = %q has no CPUs of the generator's to use: the telemetry backends share every CPU too\n", spec.TelemetryCPUsGenerator)
		}
		return all, nil
	}
	fmt.Fprintf(log, "isolation: the load generator runs on CPU %s, the system under test on CPU %s (cgroup %s cpusets)\n", cgroup.List(gen), cgroup.List(sut), m.Version())
	return Isolation{
		Mode:        spec.IsolationCPUSet,
		LoadgenCPUs: cgroup.List(gen), SUTCPUs: cgroup.List(sut),
		LoadgenCores: len(gen), SUTCores: len(sut),
		Cgroup: m.Version().String(),
	}, nil
}

// deployerTraits are the traits of s's deployer: Remote (it runs its
// processes off this machine) and Unmanaged (it starts none) decide what
// isolation can do. An unknown deployer has none; Resolve names it.
func deployerTraits(s *spec.Spec) deploy.Traits {
	d, err := deploy.Lookup(s.Deploy.Deployer)
	if err != nil {
		return deploy.Traits{} // Resolve reports the unknown name
	}
	return d.Traits()
}

// checkCgroups fails, at the key, when the spec limits resources (in its
// tables or through a factor) where no cgroup hierarchy is writable, so
// that the experiment stops before anything starts rather than at its
// first deployment.
func checkCgroups(s *spec.Spec) error {
	key := ""
	for name := range s.Deploy.Resources {
		key = "deploy.resources." + name
	}
	for _, f := range s.Experiment.Factors {
		if strings.HasPrefix(f.Name, "deploy.resources.") {
			key = f.Name
		}
	}
	if key == "" {
		return nil
	}
	if _, err := cgroup.Detect(); err != nil {
		return s.Errorf(key, "limits need cgroups: %v", err)
	}
	return nil
}

// Enter moves the calling process, the load generator, onto its CPUs for
// the experiment; the returned function moves it back and removes its
// groups. Under "none" it does nothing.
func (iso *Isolation) Enter() (leave func() error, err error) {
	if iso.Mode != spec.IsolationCPUSet {
		return func() error { return nil }, nil
	}
	m, err := cgroup.Open()
	if err != nil {
		return nil, err
	}
	gen, err := m.New("loadgen", cgroup.Limits{CPUs: iso.LoadgenCPUs})
	if err != nil {
		return nil, err
	}
	sut, err := m.New("sut", cgroup.Limits{CPUs: iso.SUTCPUs})
	if err != nil {
		_ = gen.Remove()
		return nil, err
	}
	back, err := gen.Enter()
	if err != nil {
		_ = errors.Join(gen.Remove(), sut.Remove())
		return nil, err
	}
	iso.loadgen, iso.sut = gen, sut
	// One P more than the generator's cores: with exactly one P per core, a
	// pacer woken by its timer waits for the P while a goroutine handling an
	// answer holds it, and that wait is the generator's own send lag. With a
	// spare P it runs at once and the kernel shares the core. Measured on an
	// idle machine (quickstart, one-core cpuset, 12 runs each, interleaved):
	// send lag p99 median 4.78 ms with one P, 1.30 ms with two, against a
	// bare timer loop beside it of 1.4-3.2 ms. The audit counts cores from
	// the affinity mask (hostclock.UsableCPUs), not from GOMAXPROCS.
	prev := goruntime.GOMAXPROCS(max(iso.LoadgenCores, 1) + 1)
	return func() error {
		goruntime.GOMAXPROCS(prev)
		iso.loadgen, iso.sut = nil, nil
		return errors.Join(back(), gen.Remove(), sut.Remove())
	}, nil
}

// AsSUT runs start with the calling process on the system under test's
// CPUs instead of the generator's, and moves it back after. Everything a
// deployment starts (an ingress, sidecars, the tracing and metrics
// backends, a database server) inherits the cpuset of the process that
// forks it, and some fork at once (nginx its workers, PostgreSQL its
// helpers), so a move afterwards would leave processes of the system
// under test on the generator's core. No load runs while a deployment
// starts, so the generator loses nothing. Outside Enter, or under "none",
// it just runs start.
func (iso *Isolation) AsSUT(start func() error) error {
	if iso == nil || iso.sut == nil {
		return start()
	}
	back, err := iso.sut.Enter()
	if err != nil {
		return fmt.Errorf("move svclab onto the system under test's CPUs to start it: %w", err)
	}
	err = start()
	if berr := back(); berr != nil {
		return errors.Join(err, fmt.Errorf("move the load generator back onto its CPUs: %w", berr))
	}
	return err
}

// telemetryOnGenerator reports whether s, or a level of one of its
// factors, asks for the telemetry backends on the generator's CPUs.
func telemetryOnGenerator(s *spec.Spec) bool {
	if s.Deploy.TelemetryCPUs == spec.TelemetryCPUsGenerator {
		return true
	}
	for _, f := range s.Experiment.Factors {
		if f.Name == "deploy.telemetry_cpus" && slices.Contains(f.Levels, any(spec.TelemetryCPUsGenerator)) {
			return true
		}
	}
	return false
}

// TelemetryCPUs is the CPU list of the telemetry backends of a run whose
// deploy.telemetry_cpus is where (deploy.Options.TelemetryCPUs): the
// generator's under "generator" with the CPUs split, else empty, the
// deployment's own.
func (iso *Isolation) TelemetryCPUs(where string) string {
	if iso == nil || iso.Mode != spec.IsolationCPUSet || where != spec.TelemetryCPUsGenerator {
		return ""
	}
	return iso.LoadgenCPUs
}

// DeployCPUs is the CPU list a deployment is confined to
// (deploy.Options.CPUs), empty for all.
func (iso *Isolation) DeployCPUs() string {
	if iso == nil || iso.Mode != spec.IsolationCPUSet {
		return ""
	}
	return iso.SUTCPUs
}

// loadgenLimits are the load generator's in run.json, nil without
// isolation.
func (iso *Isolation) loadgenLimits() *cgroup.Limits {
	if iso == nil || iso.Mode != spec.IsolationCPUSet {
		return nil
	}
	return &cgroup.Limits{CPUs: iso.LoadgenCPUs}
}

// oomPrefix begins a failed run's reason with "out of memory: " when the
// OOM killer ended a process at its limit, so that the reason says so
// first.
func oomPrefix(err error) string {
	var ee *deploy.ExitError
	if errors.As(err, &ee) && ee.OutOfMemory {
		return "out of memory: "
	}
	return ""
}
