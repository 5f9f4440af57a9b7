// Package cgroup creates, configures, samples and removes the Linux
// control groups svclab puts processes in: a CPU quota, a memory limit and
// a CPU set per process, and the CPU set of the load generator.
//
// It speaks cgroup v1 (the cpu, cpuacct, cpuset and memory controllers,
// each mounted under /sys/fs/cgroup) and v2 (the unified hierarchy), through
// github.com/containerd/cgroups/v3. A hybrid host (v1 controllers, an empty
// v2 hierarchy beside them) is v1.
//
// Every group lives under one parent per svclab process,
// svclab/<pid>-<start>/, whose name records its owner's PID and start time
// (as package tempdir records a directory's owner), so that Sweep, run by
// the next svclab to start, can remove the groups of an owner that was
// killed with -9 while leaving a live owner's alone.
package cgroup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cgroups "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/svclab/svclab/internal/tempdir"
)

// Root is where the cgroup file systems are mounted.
const Root = "/sys/fs/cgroup"

// Parent is the group under which every svclab process keeps its groups.
const Parent = "svclab"

// Period is the CFS period a CPU quota is a share of: the kernel's
// default, 100 ms.
const Period = 100_000 // µs

// Version is the cgroup interface in use.
type Version int

// The cgroup versions.
const (
	V1 Version = 1
	V2 Version = 2
)

func (v Version) String() string { return "v" + strconv.Itoa(int(v)) }

// controllers are the v1 controllers svclab uses, each its own mount here
// (a host that co-mounts cpu,cpuacct links both names to the one mount).
var controllers = []cgroup1.Name{cgroup1.Cpuset, cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Memory}

func hierarchy() ([]cgroup1.Subsystem, error) {
	return []cgroup1.Subsystem{
		cgroup1.NewCpuset(Root), cgroup1.NewCpu(Root), cgroup1.NewCpuacct(Root), cgroup1.NewMemory(Root),
	}, nil
}

// ErrUnavailable is wrapped by the errors of Detect and Open when no
// cgroup hierarchy is writable.
var ErrUnavailable = errors.New("cgroups unavailable")

// Detect tells which cgroup version this host has, and fails with an error
// wrapping ErrUnavailable when svclab cannot create groups in it (not
// root, a read-only mount, or a controller missing).
func Detect() (Version, error) {
	switch cgroups.Mode() {
	case cgroups.Unified:
		if err := writable(Root); err != nil {
			return 0, err
		}
		return V2, nil
	case cgroups.Legacy, cgroups.Hybrid:
		for _, c := range controllers {
			if err := writable(filepath.Join(Root, string(c))); err != nil {
				return 0, err
			}
		}
		return V1, nil
	}
	return 0, fmt.Errorf("%w: no cgroup file system at %s", ErrUnavailable, Root)
}

// writable checks that a group can be made in dir, by making svclab's
// parent there.
func writable(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, dir, err)
	}
	p := filepath.Join(dir, Parent)
	err := os.Mkdir(p, 0o755)
	if err == nil {
		// A probe only: the parent is made again with the first group, and
		// a command that makes none (every start's sweep) leaves nothing.
		_ = os.Remove(p)
	}
	if errors.Is(err, os.ErrExist) {
		// Made by an earlier svclab, perhaps another user's: the groups
		// go inside it, so it is what must be writable.
		err = unix.Access(p, unix.W_OK)
	}
	if err != nil {
		return fmt.Errorf("%w: cannot create groups in %s (svclab needs root, or a delegated cgroup v2 subtree): %v", ErrUnavailable, p, err)
	}
	return nil
}

// Limits is what a group allows its processes. A zero field sets nothing.
type Limits struct {
	// CPU is a number of cores, enforced as a CFS quota of CPU×Period per
	// Period.
	CPU float64 `json:"cpu,omitempty"`
	// Memory is a hard limit in bytes: past it the kernel reclaims, then
	// the OOM killer ends a process of the group.
	Memory int64 `json:"memory_bytes,omitempty"`
	// CPUs is a CPU list ("1", "0-3,6") the processes may run on.
	CPUs string `json:"cpus,omitempty"`
}

// Stats is one reading of a group's counters.
type Stats struct {
	// CPUSeconds is the CPU time the group's processes used.
	CPUSeconds float64
	// Periods is the number of CFS periods with runnable processes, and
	// ThrottledPeriods those in which the quota ran out.
	Periods, ThrottledPeriods uint64
	// ThrottledSeconds is the time the group's threads waited for the
	// next period.
	ThrottledSeconds float64
	// MemoryBytes is the memory charged to the group (page cache
	// included), as the limit counts it.
	MemoryBytes int64
	// OOMKills counts processes of the group the OOM killer ended.
	OOMKills uint64
}

// Manager makes the calling process's groups, under svclab/<owner>/.
type Manager struct {
	version Version
	owner   string // <pid>-<start>

	mu     sync.Mutex
	groups map[string]*Group
}

var (
	ownMu sync.Mutex
	own   *Manager
)

// Open returns the calling process's manager, detecting the cgroup version
// on first use; every caller in a process shares it, as they share the
// process's parent group. It fails with an error wrapping ErrUnavailable
// where no cgroup hierarchy is writable.
func Open() (*Manager, error) {
	ownMu.Lock()
	defer ownMu.Unlock()
	if own != nil {
		return own, nil
	}
	v, err := Detect()
	if err != nil {
		return nil, err
	}
	own = &Manager{version: v, owner: ownerName(tempdir.Self()), groups: map[string]*Group{}}
	return own, nil
}

// RemoveOwn removes every group the calling process made and its parent
// group, when it made any; for the end of a command.
func RemoveOwn() error {
	ownMu.Lock()
	m := own
	ownMu.Unlock()
	if m == nil {
		return nil
	}
	return m.Close()
}

// Version is the cgroup version in use.
func (m *Manager) Version() Version { return m.version }

func ownerName(o tempdir.Owner) string { return fmt.Sprintf("%d-%d", o.PID, o.Start) }

// parseOwner reads an owner group's name, "<pid>-<start>".
func parseOwner(name string) (tempdir.Owner, bool) {
	p, s, ok := strings.Cut(name, "-")
	if !ok {
		return tempdir.Owner{}, false
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(s, 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return tempdir.Owner{}, false
	}
	return tempdir.Owner{PID: pid, Start: start}, true
}

// Group is one control group.
type Group struct {
	m    *Manager
	name string
	path string // relative to a hierarchy's root, e.g. /svclab/1-2/name
	lim  Limits
	v1   cgroup1.Cgroup
	v2   *cgroup2.Manager
}

// New makes a group named name (unique within the manager) with limits l.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	if err := checkNew(name, l); err != nil {
		return nil, err
	}
	return m.create(name, "/"+Parent+"/"+m.owner+"/"+dirName(name), l)
}

// maxDirName bounds a group's directory name below the file system's 255
// bytes: a group of a 1,000-service monolith is named after its every
// component.
const maxDirName = 128

// dirName is the directory of a group named name: the name, or a long
// name's start and a hash of the whole, which keeps it unique.
func dirName(name string) string {
	if len(name) <= maxDirName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.ToValidUTF8(name[:maxDirName-17], "") + "~" + hex.EncodeToString(sum[:8])
}

// checkNew checks a new group's name and limits.
func checkNew(name string, l Limits) error {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return fmt.Errorf("cgroup name %q: must be a non-empty file name", name)
	}
	if l.CPU < 0 || math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0) || l.Memory < 0 {
		return fmt.Errorf("cgroup %s: limits must be positive: %+v", name, l)
	}
	return nil
}

// create makes the group at path (below a hierarchy's root), known to the
// manager as key.
func (m *Manager) create(key, path string, l Limits) (*Group, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.groups[key]; ok {
		return nil, fmt.Errorf("cgroup %s exists already", key)
	}
	g := &Group{m: m, name: key, path: path, lim: l}
	var err error
	// svclab's parent group is shared by every svclab on the machine, and
	// one that finds it empty removes it (Detect's probe, the sweep): a
	// group made meanwhile finds its parent gone (ENOENT, or ENODEV from a
	// directory being removed), or, in v1, a parent made again without its
	// cpuset (EACCES on the group's CPUs). The next try makes it whole.
	for try := 0; try < 20; try++ {
		switch m.version {
		case V1:
			g.v1, err = cgroup1.New(cgroup1.StaticPath(g.path), l.v1(), cgroup1.WithHierarchy(hierarchy))
		case V2:
			g.v2, err = cgroup2.NewManager(Root, g.path, l.v2())
		}
		if err == nil || !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.EACCES) {
			break
		}
		g.removeDirs()
		time.Sleep(time.Duration(try+1) * time.Millisecond)
	}
	if err != nil {
		g.removeDirs()
		return nil, fmt.Errorf("create cgroup %s (%s): %w", g.path, m.version, err)
	}
	m.groups[key] = g
	return g, nil
}

func (l Limits) quota() *int64 {
	if l.CPU == 0 {
		return nil
	}
	q := int64(math.Round(l.CPU * Period))
	return &q
}

func (l Limits) v1() *specs.LinuxResources {
	r := &specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: l.CPUs}}
	if sh := NiceShares(); sh > 0 { // nice.go
		r.CPU.Shares = &sh
	}
	if q := l.quota(); q != nil {
		p := uint64(Period)
		r.CPU.Quota, r.CPU.Period = q, &p
	}
	if l.Memory > 0 {
		lim := l.Memory
		r.Memory = &specs.LinuxMemory{Limit: &lim}
	}
	return r
}

func (l Limits) v2() *cgroup2.Resources {
	r := &cgroup2.Resources{CPU: &cgroup2.CPU{Cpus: l.CPUs}}
	if sh := NiceShares(); sh > 0 { // nice.go
		w := cgroup2.ConvertCPUSharesToCgroupV2Value(sh)
		r.CPU.Weight = &w
	}
	if q := l.quota(); q != nil {
		p := uint64(Period)
		r.CPU.Max = cgroup2.NewCPUMax(q, &p)
	}
	if l.Memory > 0 {
		lim := l.Memory
		r.Memory = &cgroup2.Memory{Max: &lim}
	}
	return r
}

// Name is the group's name within its manager.
func (g *Group) Name() string { return g.name }

// Path is the group's path below a hierarchy's root, e.g.
// /svclab/4711-1234/name.
func (g *Group) Path() string { return g.path }

// Limits are what the group was made with.
func (g *Group) Limits() Limits { return g.lim }

// Add moves the process pid (all its threads) into the group.
func (g *Group) Add(pid int) error {
	var err error
	if g.v1 != nil {
		err = g.v1.Add(cgroup1.Process{Pid: pid})
	} else {
		err = g.v2.AddProc(uint64(pid))
	}
	if err != nil {
		return fmt.Errorf("move pid %d into cgroup %s: %w", pid, g.path, err)
	}
	return nil
}

// ProcsFiles are the files a process writes its own PID to in order to
// join the group (one per v1 controller), for a child that joins before
// it runs anything else.
func (g *Group) ProcsFiles() []string {
	if g.v2 != nil {
		return []string{filepath.Join(Root, g.path, "cgroup.procs")}
	}
	var out []string
	for _, c := range controllers {
		out = append(out, filepath.Join(Root, string(c), g.path, "cgroup.procs"))
	}
	return out
}

// Join moves the calling process into the groups whose cgroup.procs files
// are given (Group.ProcsFiles).
func Join(procsFiles []string) error {
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, f := range procsFiles {
		if err := os.WriteFile(f, pid, 0); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	return nil
}

// Stats reads the group's counters now.
func (g *Group) Stats() (Stats, error) {
	if g.v2 != nil {
		m, err := g.v2.Stat()
		if err != nil {
			return Stats{}, fmt.Errorf("cgroup %s: %w", g.path, err)
		}
		var s Stats
		if c := m.GetCPU(); c != nil {
			s.CPUSeconds = float64(c.UsageUsec) / 1e6
			s.Periods, s.ThrottledPeriods = c.NrPeriods, c.NrThrottled
			s.ThrottledSeconds = float64(c.ThrottledUsec) / 1e6
		}
		s.MemoryBytes = int64(m.GetMemory().GetUsage())
		s.OOMKills = m.GetMemoryEvents().GetOomKill()
		return s, nil
	}
	m, err := g.v1.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return Stats{}, fmt.Errorf("cgroup %s: %w", g.path, err)
	}
	s := Stats{
		CPUSeconds:       float64(m.GetCPU().GetUsage().GetTotal()) / 1e9,
		Periods:          m.GetCPU().GetThrottling().GetPeriods(),
		ThrottledPeriods: m.GetCPU().GetThrottling().GetThrottledPeriods(),
		ThrottledSeconds: float64(m.GetCPU().GetThrottling().GetThrottledTime()) / 1e9,
		MemoryBytes:      int64(m.GetMemory().GetUsage().GetUsage()),
	}
	s.OOMKills, err = oomKills(filepath.Join(Root, string(cgroup1.Memory), g.path, "memory.oom_control"))
	return s, err
}

// oomKills reads the oom_kill counter of a v1 memory.oom_control file
// (Linux 4.13 and later), which the library's statistics leave out.
func oomKills(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, nil
}

// Remove deletes the group. Its processes must have exited (or have been
// moved out); one still in it is killed first, since nothing svclab
// started may outlive its deployment.
func (g *Group) Remove() error {
	g.m.mu.Lock()
	for key := range g.m.groups {
		// Its children go with it (NewChild).
		if key == g.name || strings.HasPrefix(key, g.name+"/") {
			delete(g.m.groups, key)
		}
	}
	g.m.mu.Unlock()
	return removeTree(g.dirs())
}

// dirs are the group's directories, one per hierarchy.
func (g *Group) dirs() []string {
	if g.m.version == V2 {
		return []string{filepath.Join(Root, g.path)}
	}
	var out []string
	for _, c := range controllers {
		out = append(out, filepath.Join(Root, string(c), g.path))
	}
	return out
}

func (g *Group) removeDirs() { _ = removeTree(g.dirs()) }

// Close removes every group the manager still has, and its parent group;
// a later Open starts afresh.
func (m *Manager) Close() error {
	ownMu.Lock()
	if own == m {
		own = nil
	}
	ownMu.Unlock()
	m.mu.Lock()
	gs := make([]*Group, 0, len(m.groups))
	for _, g := range m.groups {
		gs = append(gs, g)
	}
	m.mu.Unlock()
	var errs []error
	for _, g := range gs {
		errs = append(errs, g.Remove())
	}
	errs = append(errs, removeTree(ownerDirs(m.version, m.owner)))
	removeEmptyParents(m.version)
	return errors.Join(errs...)
}

// ownerDirs are an owner's parent groups, one per hierarchy.
func ownerDirs(v Version, owner string) []string {
	dirs := parentDirs(v)
	for i, d := range dirs {
		dirs[i] = filepath.Join(d, owner)
	}
	return dirs
}
