package conformance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	_ "github.com/svclab/svclab/apps/all" // the apps the Go host runs
	"github.com/svclab/svclab/internal/deploy/langhost"
	"github.com/svclab/svclab/internal/procgroup"
	"github.com/svclab/svclab/internal/runtime"
	_ "github.com/svclab/svclab/internal/runtime/transport/all" // every transport
	hostv1 "github.com/svclab/svclab/proto/host/v1"
)

// goHostEnv makes the test binary a Go host (see TestMain).
const goHostEnv = "SVCLAB_CONFORMANCE_GO_HOST"

// propagateEnv asks every host to send a call's incoming metadata on with
// the calls it makes, as a tracing interceptor would: how the suite sees
// metadata cross a host both ways. Java and Python read it themselves; the
// Go host gets propagateMetadata as middleware.
const propagateEnv = "SVCLAB_PROPAGATE_METADATA"

// TestMain runs the test binary as a Go host when goHostEnv is set: exactly
// what `svclab host` runs (runtime.RunHost, stopped by SIGTERM), plus the
// metadata propagation the suite asks of every implementation.
func TestMain(m *testing.M) {
	if os.Getenv(goHostEnv) == "1" {
		os.Exit(runGoHost())
	}
	os.Exit(m.Run())
}

func runGoHost() int {
	cfg, err := runtime.DecodeHostConfig([]byte(os.Getenv(runtime.HostConfigEnv)))
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		var mw runtime.Middleware
		if os.Getenv(propagateEnv) == "1" {
			mw.Server = append(mw.Server, propagateMetadata)
		}
		err = runtime.RunHost(ctx, cfg, mw)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svclab host:", err)
		return 1
	}
	return 0
}

// propagateMetadata makes a call's incoming metadata (less the keys gRPC
// and HTTP reserve) the outgoing metadata of the calls its handler makes.
func propagateMetadata(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if in, ok := metadata.FromIncomingContext(ctx); ok {
		out := metadata.MD{}
		for k, v := range in {
			if propagates(k) {
				out[k] = v
			}
		}
		ctx = metadata.NewOutgoingContext(ctx, out)
	}
	return handler(ctx, req)
}

func propagates(k string) bool {
	switch k {
	case "accept", "accept-encoding", "connection", "content-length", "content-type", "keep-alive",
		"te", "transfer-encoding", "upgrade", "user-agent", "grpc-timeout", "host":
		return false
	}
	return !strings.HasPrefix(k, "grpc-") && !strings.HasPrefix(k, ":")
}

// impl is one language's implementation: how to start it as a host.
type impl struct {
	lang string
	// argv returns the command that runs a host reading SVCLAB_HOST_CONFIG,
	// building the implementation first if need be. It skips t, saying
	// why, only when the language's toolchain is missing.
	argv func(t testing.TB) []string
}

var impls = []impl{
	{lang: "go", argv: func(t testing.TB) []string {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		return []string{exe}
	}},
	{lang: "java", argv: func(t testing.TB) []string {
		for _, tool := range []string{"java", "mvn"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("java: %s not found on PATH, so the Java implementation (impl/java) is not checked", tool)
			}
		}
		makeTarget(t, "java")
		jar, err := filepath.EvalSymlinks(filepath.Join(repoRoot(t), "impl", "java", "target", "svclab-java.jar"))
		if err != nil {
			t.Fatalf("java: make java left no jar: %v", err)
		}
		// C1 only and the serial collector: JVMs start faster on this
		// suite's two cores; the wire is the same. The class-data archive
		// too, as the deployer starts Java hosts.
		argv := []string{"java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"}
		return append(append(argv, langhost.ClassDataArchive(jar)...), "-jar", jar)
	}},
	{lang: "python", argv: func(t testing.TB) []string {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python: python3 not found on PATH, so the Python implementation (impl/python) is not checked")
		}
		makeTarget(t, "pyimpl")
		py := filepath.Join(repoRoot(t), "impl", "python", ".venv", "bin", "python")
		if _, err := os.Stat(py); err != nil {
			t.Fatalf("python: make pyimpl left no %s: %v", py, err)
		}
		return []string{py, "-m", "svclab_impl"}
	}},
}

var makeOnce sync.Map // target → *makeResult

type makeResult struct {
	once sync.Once
	err  error
	out  []byte
}

// makeTarget runs `make TARGET` at the repository's root once per test
// binary: a no-op when `make test` has built it already.
func makeTarget(t testing.TB, target string) {
	t.Helper()
	r, _ := makeOnce.LoadOrStore(target, &makeResult{})
	mr := r.(*makeResult)
	mr.once.Do(func() {
		start := time.Now()
		cmd := exec.Command("make", "-s", target)
		cmd.Dir = repoRoot(t)
		mr.out, mr.err = cmd.CombinedOutput()
		if d := time.Since(start); d > 2*time.Second {
			t.Logf("make %s took %s", target, d.Round(time.Millisecond))
		}
	})
	if mr.err != nil {
		t.Fatalf("make %s: %v\n%s", target, mr.err, mr.out)
	}
}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", dir, err)
	}
	return dir
}

// proc is one host process.
type proc struct {
	name  string
	cmd   *exec.Cmd
	group *procgroup.Leader // signals the host's group until it is reaped
	out   *lines
	done  chan struct{}
	err   error // Wait's result, once done is closed
	addrs map[string]string
}

// lines collects a process's output and finds lines in it.
type lines struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) add(line string) {
	l.mu.Lock()
	l.buf.WriteString(line + "\n")
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// count is the number of lines holding s.
func (l *lines) count(s string) int {
	return strings.Count(l.String(), s)
}

// waitFor waits until a line holds s (the first one is returned) or the
// time is up.
func (l *lines) waitFor(s string, timeout time.Duration, done <-chan struct{}) (string, bool) {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		text, changed := l.buf.String(), l.changed
		l.mu.Unlock()
		for line := range strings.SplitSeq(text, "\n") {
			if strings.Contains(line, s) {
				return line, true
			}
		}
		select {
		case <-changed:
		case <-done:
			return "", false
		case <-deadline:
			return "", false
		}
	}
}

// readyTimeout bounds a host's start: a JVM and Spring Boot on two busy
// cores take a few seconds.
const readyTimeout = 90 * time.Second

var servedRE = regexp.MustCompile(`(\S+) on (grpc|http)\+tcp://([^\s,]+)`)

// startHost starts a host with cfg and waits for its ready line; its
// listeners' addresses (by component, or "gateway") come from that line.
// At the test's end it is sent SIGTERM, and must exit with status 0.
func startHost(t testing.TB, im impl, argv []string, cfg *hostv1.HostConfig) *proc {
	t.Helper()
	p, err := spawn(argv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(t) })
	line, ok := p.out.waitFor(runtime.ReadyMarker, readyTimeout, p.done)
	if !ok {
		t.Fatalf("%s host %s did not get ready in %s (exit: %v); output:\n%s", im.lang, p.name, readyTimeout, p.exitErr(), p.out)
	}
	p.addrs = map[string]string{}
	for _, m := range servedRE.FindAllStringSubmatch(line, -1) {
		p.addrs[m[1]] = m[3]
	}
	return p
}

func spawn(argv []string, cfg *hostv1.HostConfig) (*proc, error) {
	js, err := runtime.EncodeHostConfig(cfg)
	if err != nil {
		return nil, err
	}
	p, err := spawnRaw(argv, string(js), nil)
	if err == nil {
		p.name = cfg.GetGroup()
	}
	return p, err
}

// spawnRaw starts a host with config as SVCLAB_HOST_CONFIG and env added.
func spawnRaw(argv []string, config string, env []string) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), runtime.HostConfigEnv+"="+config, goHostEnv+"=1", propagateEnv+"=1")
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &proc{name: "host", cmd: cmd, group: procgroup.New(cmd), out: newLines(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %v: %w", argv, err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.out.add(sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		p.err = p.group.Wait()
		pw.Close()
		// The last lines are in p.out before done says the host ended:
		// a host that failed at once was read as saying nothing.
		<-read
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exitErr() error {
	select {
	case <-p.done:
		if p.err == nil {
			return errors.New("exit status 0")
		}
		return p.err
	default:
		return errors.New("still running")
	}
}

// stopTimeout bounds a host's exit after SIGTERM.
const stopTimeout = 15 * time.Second

// stop sends SIGTERM and checks the host exits with status 0, as the host
// protocol says; SIGKILL to its process group after stopTimeout.
func (p *proc) stop(t testing.TB) {
	select {
	case <-p.done:
		return // exited before (a test that expected it checked it)
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("host %s: after SIGTERM: %v, want exit status 0; output:\n%s", p.name, p.err, p.out)
		}
	case <-time.After(stopTimeout):
		_ = p.group.Signal(syscall.SIGKILL)
		<-p.done
		t.Errorf("host %s: still running %s after SIGTERM (killed); output:\n%s", p.name, stopTimeout, p.out)
	}
}

// hostConfig is the config of a group of one component serving on
// loopback TCP over transportName, calling peers.
func hostConfig(app, component, transportName string, peers map[string]string) *hostv1.HostConfig {
	cfg := &hostv1.HostConfig{
		Deployment: "conformance", App: app, ConfigJson: "{}", Transport: transportName,
		Group: component, Components: []string{component}, Entry: "frontend",
		Listeners: map[string]*hostv1.Listener{component: {Endpoint: &hostv1.Endpoint{
			Transport: transportName, Network: "tcp", Addr: "127.0.0.1:0"}}},
	}
	for name, addr := range peers {
		if cfg.Peers == nil {
			cfg.Peers = map[string]*hostv1.EndpointSet{}
		}
		cfg.Peers[name] = &hostv1.EndpointSet{Endpoints: []*hostv1.Endpoint{{Transport: transportName, Network: "tcp", Addr: addr}}}
	}
	return cfg
}
