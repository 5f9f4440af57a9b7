package external

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/svclab/svclab/internal/deploy/probe"
	"github.com/svclab/svclab/internal/spec"
)

// Table is the spec table the deployer owns.
const Table = "deploy.external"

// DefaultSetupTimeout bounds setup and teardown when
// deploy.external.setup_timeout is left out.
const DefaultSetupTimeout = time.Minute

// Protocols of the system's url, by scheme: what [load] speaks to it.
const (
	protoHTTP = "http"
	protoH2C  = "h2c"
	protoGRPC = "grpc"
)

// schemes maps each url scheme to its protocol.
var schemes = map[string]string{
	"http":     protoHTTP,
	"h2c":      protoH2C,
	"grpc":     protoGRPC,
	"grpc+tcp": protoGRPC,
}

// Ready checks other than an HTTP path.
const (
	// readyGRPC asks grpc.health.v1 about the whole server.
	readyGRPC = probe.GRPC
	// readyTCP waits for a connect; the default.
	readyTCP = probe.TCP
)

// Keys is [deploy.external]. Its keys other than these are the user's
// own (User): free-form scalars that setup and teardown name in their
// templates ({deploy.external.replicas}), so that a factor over them
// reaches the system through setup.
type Keys struct {
	// URL is where the system answers: http://, h2c:// or grpc+tcp://
	// (grpc://) with host and port.
	URL string
	// Setup runs before each design point, Teardown after it: argv, no
	// shell, in the spec's directory, each bounded by SetupTimeout.
	Setup, Teardown []string
	SetupTimeout    time.Duration
	// Ready is an HTTP path on URL that answers 2xx when the system is
	// ready, "grpc" for grpc.health.v1 (another string is a service
	// name for it), or "tcp" for a connect (the default).
	Ready string
	// Processes are the system's processes to sample: PIDs, and
	// patterns matched against command lines.
	Processes []Named
	// User are the user's own keys, by name.
	User map[string]any

	scheme, protocol, hostport string
	// failed are the keys of the table ("setup") whose values KeysOf
	// refused: the checks that read them (checkSpec) leave out what
	// they would say of the value they did not get.
	failed map[string]bool
}

// Named is one entry of deploy.external.processes: a PID or a pattern.
type Named struct {
	PID     int
	Pattern string
}

func (n Named) String() string {
	if n.Pattern != "" {
		return fmt.Sprintf("%q", n.Pattern)
	}
	return fmt.Sprintf("%d", n.PID)
}

// known are the keys of [deploy.external] that are not the user's.
var known = []string{"url", "setup", "teardown", "setup_timeout", "ready", "processes"}

// KeysOf decodes and checks [deploy.external] of s, each value alone;
// every mistake is reported, each at its key. The table is free-form
// beyond the known keys, so spec.Decode, which refuses keys it has no
// field for, is not used.
func KeysOf(s *spec.Spec) (*Keys, error) {
	k := &Keys{SetupTimeout: DefaultSetupTimeout, User: map[string]any{}, Ready: readyTCP, failed: map[string]bool{}}
	raw, written := s.Lookup(Table)
	if !written {
		return k, nil
	}
	t, ok := raw.(map[string]any)
	if !ok {
		return k, s.Errorf(Table, "must be a table, got %s", spec.Echo(raw))
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		k.failed[key] = true
		errs = append(errs, s.Errorf(Table+"."+key, format, args...))
	}
	for _, name := range slices.Sorted(maps.Keys(t)) {
		v := t[name]
		switch name {
		case "url":
			str, ok := v.(string)
			if !ok {
				bad(name, "must be a URL string such as \"http://127.0.0.1:8080\", got %s", spec.Echo(v))
				continue
			}
			k.URL = str
			if err := k.parseURL(); err != nil {
				bad(name, "%v", err)
			}
		case "setup", "teardown":
			argv, err := argvOf(v)
			if err == nil && len(argv) == 0 {
				err = errors.New("must name a program, e.g. [\"./configure.sh\", \"{deploy.external.replicas}\"] (leave the key out for none)")
			}
			if err == nil && strings.TrimSpace(argv[0]) == "" {
				err = errors.New("the program (its first element) is empty")
			}
			if err != nil {
				bad(name, "%v", err)
				continue
			}
			if name == "setup" {
				k.Setup = argv
			} else {
				k.Teardown = argv
			}
		case "setup_timeout":
			str, ok := v.(string)
			d, err := time.ParseDuration(str)
			if !ok || err != nil || d <= 0 {
				bad(name, "must be a positive duration such as \"2m\", got %s (leave the key out for %s)", spec.Echo(v), DefaultSetupTimeout)
				continue
			}
			k.SetupTimeout = d
		case "ready":
			str, ok := v.(string)
			if !ok || str == "" {
				bad(name, "must be an HTTP path such as \"/healthz\", \"grpc\" (grpc.health.v1) or \"tcp\" (a connect), got %s", spec.Echo(v))
				continue
			}
			k.Ready = str
		case "processes":
			list, ok := v.([]any)
			if !ok {
				bad(name, "must be a list of PIDs and command-line patterns, e.g. [1234, \"nginx: worker\"], got %s", spec.Echo(v))
				continue
			}
			for i, e := range list {
				switch e := e.(type) {
				case int64:
					if e <= 0 || e > 1<<22 {
						bad(name, "element %d: %d is no PID", i+1, e)
						continue
					}
					k.Processes = append(k.Processes, Named{PID: int(e)})
				case string:
					if strings.TrimSpace(e) == "" {
						bad(name, "element %d: an empty pattern matches every process", i+1)
						continue
					}
					k.Processes = append(k.Processes, Named{Pattern: e})
				default:
					bad(name, "element %d: want a PID or a command-line pattern, got %s", i+1, spec.Echo(e))
				}
			}
		default:
			_, isTable := v.(map[string]any)
			_, isList := v.([]any)
			if isTable || isList {
				if hint := nearKnown(name, known); hint != "" {
					bad(name, "unknown key%s", hint)
				} else {
					bad(name, "a key of your own must be a scalar that setup can be given in a template, got %s", spec.Echo(v))
				}
				continue
			}
			k.User[name] = v
		}
	}
	if k.protocol == protoGRPC && strings.HasPrefix(k.Ready, "/") {
		bad("ready", "%s is a gRPC server, which has no paths: write \"grpc\" for grpc.health.v1, a service name for its health, or \"tcp\"", k.URL)
	} else if k.protocol != protoGRPC && k.protocol != "" && k.Ready != readyTCP && !strings.HasPrefix(k.Ready, "/") {
		bad("ready", "want an HTTP path on %s such as \"/healthz\", or \"tcp\" for a connect, got %q", k.URL, k.Ready)
	}
	return k, errors.Join(errs...)
}

// nearKnown is spec.DidYouMean's hint when one of known is near name
// ("teardwon"), else "".
func nearKnown(name string, known []string) string {
	if hint := spec.DidYouMean(name, known); strings.HasPrefix(hint, " (did you mean") {
		return hint
	}
	return ""
}

// argvOf reads a command, a TOML array of strings.
func argvOf(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be a command as a list of strings, e.g. [\"./configure.sh\", \"{deploy.external.replicas}\"], got %s", spec.Echo(v))
	}
	out := make([]string, len(list))
	for i, e := range list {
		str, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("element %d must be a string, got %s", i+1, spec.Echo(e))
		}
		out[i] = str
	}
	return out, nil
}

// parseURL checks URL and fills the scheme, protocol and host:port.
func (k *Keys) parseURL() error {
	u, err := url.Parse(k.URL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("want a URL with a scheme, host and port such as \"http://127.0.0.1:8080\" (or h2c://, grpc+tcp://), got %q", k.URL)
	}
	scheme := strings.ToLower(u.Scheme)
	proto, ok := schemes[scheme]
	if !ok {
		return fmt.Errorf("scheme %q: want one of http, h2c, grpc+tcp (or grpc); %s", u.Scheme, tlsNote(scheme))
	}
	if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" {
		return fmt.Errorf("%q needs a port, e.g. %s://127.0.0.1:8080", k.URL, scheme)
	}
	if proto == protoGRPC && (strings.Trim(u.Path, "/") != "" || u.RawQuery != "") {
		return fmt.Errorf("a gRPC url is host:port only, got %q (the method is load.request.method)", k.URL)
	}
	k.scheme, k.protocol, k.hostport = scheme, proto, u.Host
	return nil
}

// tlsNote says why https is not among the schemes.
func tlsNote(scheme string) string {
	if scheme == "https" {
		return "svclab drives plaintext servers only"
	}
	return "the scheme says how [load] speaks to the system"
}

// Target is the load's target for the url: an http:// URL for http and
// h2c (the path kept), host:port for gRPC.
func (k *Keys) Target() string {
	switch k.protocol {
	case protoGRPC:
		return k.hostport
	case protoH2C:
		return "http" + strings.TrimPrefix(k.URL, k.URL[:len(k.scheme)])
	}
	return k.URL
}

// Protocol is the load protocol the url's scheme asks for.
func (k *Keys) Protocol() string { return cmp.Or(k.protocol, protoHTTP) }
