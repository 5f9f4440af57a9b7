package program

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

// AppName is the value of app.name whose components are programs.
const AppName = "exec"

// The protocols a program speaks (app.components.<name>.protocol).
const (
	ProtoHTTP = "http"
	ProtoH2C  = "h2c"
	ProtoGRPC = "grpc"
	ProtoTCP  = "tcp"
)

// Protocols lists the values of protocol.
var Protocols = []string{ProtoHTTP, ProtoH2C, ProtoGRPC, ProtoTCP}

// Health checks other than an HTTP path.
const (
	// HealthTCP waits for a connect; the default.
	HealthTCP = "tcp"
	// HealthGRPC asks grpc.health.v1 about the whole server.
	HealthGRPC = "grpc"
)

func init() {
	runtime.Register(&runtime.App{
		Name:      AppName,
		Summary:   "programs of your own ([app.components.<name>]): any binary, script or server that listens on an address",
		NewConfig: func() runtime.Config { return &Config{} },
	})
}

// Config is the exec app's [app] table.
type Config struct {
	// EntryName is app.entry, the component the load drives.
	EntryName string `toml:"entry" json:"entry"`
	// Programs are [app.components.<name>].
	Programs map[string]*Component `toml:"components" json:"components"`
}

// Component is one program: [app.components.<name>].
type Component struct {
	// Command is the program and its arguments, templated ({listen},
	// {port}, {addr:<name>}); no shell.
	Command []string `toml:"command" json:"command,omitempty"`
	// Image is what the kube deployer runs instead, listening on Port.
	Image string `toml:"image" json:"image,omitempty"`
	Port  int    `toml:"port" json:"port,omitempty"`
	// Protocol is what the program speaks on its address.
	Protocol string `toml:"protocol" json:"protocol"`
	// Health is an HTTP path that answers 2xx when the program is ready,
	// "grpc" for grpc.health.v1, or "tcp" for a connect (the default).
	Health string `toml:"health" json:"health,omitempty"`
	// Calls are the components it calls: they start, and are healthy,
	// before it starts.
	Calls []string `toml:"calls" json:"calls,omitempty"`
	// Env is added to its environment, templated as Command is.
	Env map[string]string `toml:"env" json:"env,omitempty"`
	// Dir is its working directory, relative to the spec's.
	Dir string `toml:"dir" json:"dir,omitempty"`
	// StartTimeout bounds its wait to be healthy; default
	// deploy.start_timeout.
	StartTimeout spec.Duration `toml:"start_timeout" json:"start_timeout,omitempty"`
}

// Names lists the components, sorted.
func (c *Config) Names() []string { return slices.Sorted(maps.Keys(c.Programs)) }

// Entry is app.entry.
func (c *Config) Entry() string { return c.EntryName }

// Components is empty: the programs are not Go components; resolve
// places them.
func (c *Config) Components() []runtime.Component { return nil }

// Requests is empty: a program's requests are [load.request]'s.
func (c *Config) Requests() []runtime.Request { return nil }

// WorkDir is the program's working directory: Dir, relative to specDir
// unless absolute.
func (p *Component) WorkDir(specDir string) string {
	if filepath.IsAbs(p.Dir) {
		return filepath.Clean(p.Dir)
	}
	return filepath.Join(specDir, p.Dir)
}

// HealthOf is the component's health check, its default filled.
func (p *Component) HealthOf() string {
	if p.Health == "" {
		return HealthTCP
	}
	return p.Health
}

// Deps are the components p calls: its calls, and the components its
// templates name.
func (p *Component) Deps() []string {
	deps := slices.Clone(p.Calls)
	for _, s := range p.templated() {
		for _, name := range addrRefs(s) {
			if !slices.Contains(deps, name) {
				deps = append(deps, name)
			}
		}
	}
	return deps
}

// templated are the strings of p that templates expand in.
func (p *Component) templated() []string {
	out := slices.Clone(p.Command)
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		out = append(out, p.Env[k])
	}
	return out
}

// Validate checks every component, and reports every mistake at once,
// each at its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, runtime.KeyErrorf(key, format, args...))
	}
	names := c.Names()
	switch {
	case len(c.Programs) == 0:
		bad("components", "missing: describe each program as [app.components.<name>] with a command and a protocol")
	case c.EntryName == "":
		bad("entry", "missing: name the component the load drives (one of %s)", strings.Join(names, ", "))
	case c.Programs[c.EntryName] == nil:
		bad("entry", "no component %q%s", c.EntryName, spec.DidYouMean(c.EntryName, names))
	case c.Programs[c.EntryName].Protocol == ProtoTCP:
		bad("entry", "component %s speaks raw tcp, which [load] cannot drive: the entry must speak http, h2c or grpc", c.EntryName)
	}
	for _, name := range names {
		p := c.Programs[name]
		key := "components." + name + "."
		if p == nil {
			continue
		}
		if len(p.Command) == 0 && p.Image == "" {
			bad(key+"command", "missing: the program and its arguments, e.g. [\"./bin/server\", \"--listen\", \"{listen}\"] (or image, for the kube deployer)")
		} else if len(p.Command) > 0 && p.Command[0] == "" {
			bad(key+"command", "the program's name is empty")
		}
		if p.Port != 0 && p.Image == "" {
			bad(key+"port", "port goes with image (the port the image's program listens on); a command is given its port as {port}")
		}
		if p.Port < 0 || p.Port > 65535 {
			bad(key+"port", "want a port from 1 to 65535, got %d", p.Port)
		}
		if !slices.Contains(Protocols, p.Protocol) {
			what := "missing"
			if p.Protocol != "" {
				what = fmt.Sprintf("unknown protocol %q%s", p.Protocol, spec.DidYouMean(p.Protocol, Protocols))
			}
			bad(key+"protocol", "%s: write what the program speaks on its address, one of %s", what, strings.Join(Protocols, ", "))
		} else if err := checkHealth(p.Protocol, p.HealthOf()); err != nil {
			bad(key+"health", "%v", err)
		}
		for _, callee := range p.Calls {
			switch {
			case callee == name:
				bad(key+"calls", "%s cannot call itself", name)
			case c.Programs[callee] == nil:
				bad(key+"calls", "no component %q%s", callee, spec.DidYouMean(callee, names))
			}
		}
		for i, s := range p.Command {
			if err := checkTemplate(s, name, names); err != nil {
				bad(fmt.Sprintf("%scommand", key), "argument %d: %v", i, err)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(p.Env)) {
			if err := checkTemplate(p.Env[k], name, names); err != nil {
				bad(key+"env."+k, "%v", err)
			}
		}
		if p.StartTimeout < 0 {
			bad(key+"start_timeout", "must not be negative, got %s", p.StartTimeout)
		}
	}
	return errors.Join(errs...)
}

// checkHealth checks a health check against the protocol it is asked
// over.
func checkHealth(protocol, health string) error {
	switch {
	case health == HealthTCP:
		return nil
	case health == HealthGRPC:
		if protocol != ProtoGRPC {
			return fmt.Errorf("%q asks grpc.health.v1, but the program speaks %s: write an HTTP path or \"tcp\"", health, protocol)
		}
		return nil
	case strings.HasPrefix(health, "/"):
		if protocol != ProtoHTTP && protocol != ProtoH2C {
			return fmt.Errorf("%q is an HTTP path, but the program speaks %s: write %s", health, protocol, map[bool]string{true: "\"grpc\" or \"tcp\"", false: "\"tcp\""}[protocol == ProtoGRPC])
		}
		return nil
	}
	return fmt.Errorf("want an HTTP path such as \"/healthz\", \"grpc\" for grpc.health.v1, or \"tcp\" for a connect, got %q", health)
}
