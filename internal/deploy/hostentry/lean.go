package hostentry

import (
	"context"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/runtime"
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// LeanSuffix names the lean host binary after the binary it serves: the
// one beside svclab is svclab-host (cmd/svclab-host). It links only what
// a host runs (the apps, the transports, the middleware), not the CLI,
// the deployers, the Kubernetes client or the analysis, so a host holds
// less than half the memory of a `svclab host` (docs/PERFORMANCE.md,
// "Synth topologies at scale"). A binary of another module (its own apps
// added, docs/YOUR-SYSTEM.md) has no such companion and runs its hosts
// itself.
const LeanSuffix = "-host"

// Command is how a deployer starts a host with the svclab binary exe:
// the lean host binary beside it (exe+LeanSuffix) when Lean accepts it,
// with no arguments before the flags, or else exe with "host". The
// deployer appends --deployment and --group.
func Command(exe string) (path string, args []string) {
	if lean, ok := Lean(exe); ok {
		return lean, nil
	}
	return exe, []string{"host"}
}

// Lean returns the lean host binary beside exe, if there is one built
// from the same source: the same module at the same version and commit,
// with the same Go, and every module it links at the version exe links.
// When the build info cannot tell two builds of one tree apart (a tree
// with uncommitted changes, or no version control stamp, as `go install`
// with -buildvcs=false writes), it must also be no older than exe, but
// for linkSlack: `make build` links it after svclab, and one left from an
// earlier build is refused. A host binary that runs other code than the
// deployer's would make a measurement of something else, so in doubt the
// deployer runs exe itself (more memory, nothing else).
func Lean(exe string) (string, bool) {
	path, why := lean(exe)
	return path, why == ""
}

// linkSlack is how much older than svclab a host binary of the same
// unstamped build may be: `go install ./cmd/...` links both at once, and
// the smaller host binary was written 24 s before svclab.
const linkSlack = 2 * time.Minute

// lean is Lean, with why the host binary beside exe is not used ("" when
// it is; errNoLean's text when there is none).
func lean(exe string) (string, string) {
	lean := exe + LeanSuffix
	li, err := os.Stat(lean)
	if err != nil {
		return "", errNoLean
	}
	if !li.Mode().IsRegular() || li.Mode().Perm()&0o111 == 0 {
		return "", lean + " is not an executable file"
	}
	ei, err := os.Stat(exe)
	if err != nil {
		return "", err.Error()
	}
	eb, err := buildinfo.ReadFile(exe)
	if err != nil {
		return "", "no build info in " + exe
	}
	lb, err := buildinfo.ReadFile(lean)
	if err != nil || !sameSource(eb, lb) {
		return "", lean + " was built from other source than " + exe
	}
	if settingOf(eb, "vcs.revision") == "" || settingOf(eb, "vcs.modified") == "true" || eb.Main.Version == "(devel)" || eb.Main.Version == "" {
		if li.ModTime().Add(linkSlack).Before(ei.ModTime()) {
			return "", lean + " is older than " + exe + " (a build of changed source without it)"
		}
	}
	return lean, ""
}

const errNoLean = "no host binary beside it"

// Describe says in a line which program the local and netns deployers
// start for each host when svclab is exe, and, when it is not the lean
// host binary, why not and what to do: a host of `svclab host` holds
// about twice the memory (docs/PERFORMANCE.md, "Synth topologies at
// scale"), so a user comparing memory should know which ran.
func Describe(exe string) string {
	path, why := lean(exe)
	if why == "" {
		return "hosts: " + path
	}
	if why == errNoLean && !svclabBuild(exe) {
		return "hosts: " + exe + " host (a binary of your own module runs its hosts itself)"
	}
	return "hosts: " + exe + " host (" + why + "; `make build` or `go install ./cmd/...` builds both)"
}

// svclabBuild says whether exe is a build of svclab's own module, which
// has a lean host binary to build (cmd/svclab-host), rather than of a
// module of the user's (docs/YOUR-SYSTEM.md), which has none.
func svclabBuild(exe string) bool {
	bi, err := buildinfo.ReadFile(exe)
	if err != nil {
		return true
	}
	return bi.Main.Path == svclabModule
}

const svclabModule = "github.com/svclab/svclab"

// sameSource says whether host, a lean host binary, was built from the
// source exe was.
func sameSource(exe, host *debug.BuildInfo) bool {
	if exe.GoVersion != host.GoVersion || exe.Main.Path != host.Main.Path || exe.Main.Version != host.Main.Version || exe.Main.Sum != host.Main.Sum {
		return false
	}
	for _, k := range []string{"vcs", "vcs.revision", "vcs.modified", "vcs.time"} {
		if settingOf(exe, k) != settingOf(host, k) {
			return false
		}
	}
	linked := map[string]string{}
	for _, m := range exe.Deps {
		linked[m.Path] = moduleID(m)
	}
	for _, m := range host.Deps {
		if linked[m.Path] != moduleID(m) {
			return false
		}
	}
	return true
}

// moduleID names a linked module's code: its version, or what replaced it.
func moduleID(m *debug.Module) string {
	if r := m.Replace; r != nil {
		return m.Version + " => " + r.Path + " " + r.Version + " " + r.Sum
	}
	return m.Version + " " + m.Sum
}

func settingOf(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// ExecLean replaces the process with the lean host binary beside the
// running executable, when Lean accepts it, passing args (the flags of
// `svclab host`) and the environment: a pod of the kube deployer runs
// `/svclab host`, and the image built from source has /svclab-host beside
// it. It returns nil, having done nothing, when there is none, and the
// error when the exec failed; the caller then runs the host itself.
func ExecLean(args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	lean, ok := Lean(exe)
	if !ok {
		return nil
	}
	if err := syscall.Exec(lean, append([]string{lean}, args...), os.Environ()); err != nil {
		return fmt.Errorf("host: exec %s: %w", lean, err)
	}
	return nil
}

// Main is the lean host binary's main (cmd/svclab-host): it takes the
// arguments of `svclab host` ([host] --config FILE, --deployment ID,
// --group NAME) and runs the host until SIGTERM or SIGINT.
func Main() {
	if err := mainErr(context.Background(), os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "svclab-host:", err)
		if errors.Is(err, errUsage) || errors.Is(err, ErrNoConfig) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func mainErr(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("svclab-host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "read the HostConfig (protobuf JSON) from this file instead of $"+runtime.HostConfigEnv)
	fs.String("deployment", "", "deployment id (a label for ps and /proc scans)")
	group := fs.String("group", "", "group name (a label; must match the config)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: svclab-host [host] [--config FILE] [--deployment ID] [--group NAME]\n\n"+
			"svclab-host runs one group of a deployment, as `svclab host` does, started by\n"+
			"svclab's deployers (not by hand).\n\n")
		fs.PrintDefaults()
	}
	// A leading "host" is taken as `svclab host` takes it, so that the
	// binary stands in for svclab wherever a deployer is given one.
	if len(args) > 0 && args[0] == "host" {
		args = args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	cfg, err := Config(*config, *group)
	if err != nil {
		return err
	}
	return Run(ctx, cfg)
}

// ErrNoConfig is Config's error when there is no HostConfig to run.
var ErrNoConfig = errors.New("no host config: set " + runtime.HostConfigEnv + " or pass --config")

// Config is the HostConfig a host runs, as LoadConfig finds it, checked
// against the --group label it was started with (empty: no check); with
// no config, ErrNoConfig.
func Config(path, group string) (*hostv1.HostConfig, error) {
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, ErrNoConfig
	}
	if group != "" && group != cfg.Group {
		return nil, fmt.Errorf("--group %s does not match the config's group %s", group, cfg.Group)
	}
	return cfg, nil
}
