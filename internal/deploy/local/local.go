// Package local is the local deployer: it runs each group of a resolved topology
// as a child process on this machine, wired together over loopback TCP or
// unix sockets.
//
// Every child re-executes the svclab binary as `svclab host`, with its
// runtime.HostConfig in the environment. The deployer binds every listening
// socket itself before it starts any child and hands each child its own
// sockets as inherited file descriptors, so all addresses are known up front,
// no port can be taken by someone else in between, and a peer can connect
// before its host has started accepting.
//
// Nothing outlives the deployer: each child runs in its own process group
// (so a terminal's Ctrl-C reaches only svclab, which then stops the children
// in order), and has a parent-death signal of SIGKILL, so even `kill -9` of
// svclab takes the children with it.
package local

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	"github.com/svclab/svclab/internal/spec"
)

// Defaults of Options.
const (
	DefaultStopTimeout = 5 * time.Second
	DefaultTailLines   = 40
	// maxLine bounds one recorded line of child output; longer lines are
	// cut, so a child printing without newlines cannot grow the buffer.
	maxLine = 4096
)

// Options tune a deployment. The zero value is ready to use.
type Options struct {
	// Executable is the binary each child runs; default os.Executable().
	Executable string
	// Args follow the executable; default ["host"]. The deployer appends
	// --deployment ID --group NAME, which also make `ps` readable.
	Args []string
	// Env is added to every child's environment (after the parent's).
	Env []string
	// ReadyTimeout bounds the wait for every child to pass its health
	// checks; default the topology's StartTimeout.
	ReadyTimeout time.Duration
	// StopTimeout is the grace between SIGTERM and SIGKILL in Stop.
	StopTimeout time.Duration
	// Log, when set, receives every line the children print, prefixed
	// with "[group] ".
	Log io.Writer
	// TailLines is how many of each child's last output lines are kept.
	TailLines int
}

// Deployment is a running topology. Its accessors are safe for concurrent use.
type Deployment struct {
	id         string
	topo       *runtime.Topology
	entry      runtime.Endpoint
	gateway    runtime.Endpoint
	gatewayURL string
	processes  []*Process

	dir         string
	stopTimeout time.Duration
	spawn       *spawner
	stopOnce    sync.Once
	stopErr     error
	stopping    chan struct{}
	exited      chan *Process
}

// ID marks every process of the deployment: it is in their arguments
// (--deployment ID) and environment (runtime.DeploymentEnv).
func (d *Deployment) ID() string { return d.id }

// Topology is the topology deployed.
func (d *Deployment) Topology() *runtime.Topology { return d.topo }

// Entry is where clients call the entry component over the configured
// transport. With the inproc transport, which cannot leave its process, it
// is the gateway.
func (d *Deployment) Entry() runtime.Endpoint { return d.entry }

// Gateway serves the entry component as HTTP/JSON (the http transport, on
// TCP).
func (d *Deployment) Gateway() runtime.Endpoint { return d.gateway }

// GatewayURL is the gateway's base URL: POST GatewayURL +
// "/<package.Service>/<Method>" with a protojson body.
func (d *Deployment) GatewayURL() string { return d.gatewayURL }

// Processes has one entry per group, in the topology's order.
func (d *Deployment) Processes() []*Process { return d.processes }

// Crashed returns a *ProcessError for the first process that exited before
// Stop was called, or nil while all run.
func (d *Deployment) Crashed() error {
	select {
	case <-d.stopping:
		return nil
	default:
	}
	for _, p := range d.processes {
		select {
		case <-p.done:
			return p.exitError()
		default:
		}
	}
	return nil
}

// StderrTails maps each group to its last output lines, joined.
func (d *Deployment) StderrTails() map[string]string {
	m := make(map[string]string, len(d.processes))
	for _, p := range d.processes {
		m[p.Name] = strings.Join(p.Tail(), "\n")
	}
	return m
}

// ProcessError is a child that exited when it should not have: during start
// (Deploy's error wraps it) or while the deployment ran (Crashed).
type ProcessError struct {
	Group      string
	Components []string
	PID        int
	// Status is how it ended, e.g. "exit status 1" or "signal: killed".
	Status string
	// Tail is its last output lines.
	Tail []string
}

func (e *ProcessError) Error() string {
	return fmt.Sprintf("group %s (components %s, pid %d) exited: %s; last output:\n%s",
		e.Group, strings.Join(e.Components, ", "), e.PID, e.Status, indent(e.Tail))
}

// StderrTails maps the group to its last output lines, joined.
func (e *ProcessError) StderrTails() map[string]string {
	return map[string]string{e.Group: strings.Join(e.Tail, "\n")}
}

// NotReadyError is a deployment whose children did not all pass their
// health checks in time; it carries every child's output tail.
type NotReadyError struct {
	Err   error
	Tails map[string]string
}

func (e *NotReadyError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	for _, g := range slices.Sorted(maps.Keys(e.Tails)) {
		fmt.Fprintf(&b, "\ngroup %s last output:\n%s", g, indent(strings.Split(e.Tails[g], "\n")))
	}
	return b.String()
}

func (e *NotReadyError) Unwrap() error { return e.Err }

// StderrTails maps each group to its last output lines, joined.
func (e *NotReadyError) StderrTails() map[string]string { return e.Tails }

// Process is one child: one group of components.
type Process struct {
	// Name is the group's name (its components joined with "+").
	Name       string
	Components []string
	PID        int
	// Listen maps each of its components that is served on a listener
	// (called from another group, or the entry) to its endpoint, and
	// "gateway" to the gateway in the entry group.
	Listen map[string]runtime.Endpoint

	cmd      *exec.Cmd
	tail     *ring
	readDone chan struct{}
	done     chan struct{}
	waitErr  error
}

// Tail returns the last lines the process wrote to stdout or stderr.
func (p *Process) Tail() []string { return p.tail.lines() }

// Done is closed when the process has exited and its output is drained.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error (nil for status 0), valid after Done.
func (p *Process) Err() error { return p.waitErr }

// describe names the process for error messages.
func (p *Process) describe() string {
	return fmt.Sprintf("group %s (components %s, pid %d)", p.Name, strings.Join(p.Components, ", "), p.PID)
}

// exitError describes how the process ended, with its output tail; valid
// after Done.
func (p *Process) exitError() *ProcessError {
	status := "exit status 0"
	if p.waitErr != nil {
		status = p.waitErr.Error()
	}
	return &ProcessError{Group: p.Name, Components: p.Components, PID: p.PID, Status: status, Tail: p.Tail()}
}

// Exited delivers each process that exits before Stop is called, so that a
// foreground command can notice a crash.
func (d *Deployment) Exited() <-chan *Process { return d.exited }

// DeploySpec resolves s and deploys it.
func DeploySpec(ctx context.Context, s *spec.Spec, opts Options) (*Deployment, error) {
	p, err := runtime.Resolve(s)
	if err != nil {
		return nil, err
	}
	return Deploy(ctx, p, opts)
}

// Deploy starts one child per group of p and waits until each passes its
// health checks over its own transport (the gateway over http). ctx bounds
// the start only; the deployment runs until Stop. If a child exits or is not
// ready within the timeout, everything started is stopped and the error
// (wrapping a *ProcessError or a *NotReadyError) names the group, its
// components, its exit status and its last output lines.
func Deploy(ctx context.Context, p *runtime.Topology, opts Options) (_ *Deployment, err error) {
	if opts.Executable == "" {
		if opts.Executable, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the svclab executable: %w", err)
		}
	}
	if opts.Args == nil {
		opts.Args = []string{"host"}
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = p.StartTimeout
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = spec.DefaultStartTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.TailLines <= 0 {
		opts.TailLines = DefaultTailLines
	}
	cfgJSON, err := p.ConfigJSON()
	if err != nil {
		return nil, err
	}

	d := &Deployment{
		id:          newID(),
		topo:        p,
		stopTimeout: opts.StopTimeout,
		stopping:    make(chan struct{}),
		exited:      make(chan *Process, len(p.Groups)),
	}
	if d.dir, err = os.MkdirTemp("", "svclab-"+d.id+"-"); err != nil {
		return nil, fmt.Errorf("deployment %s: temp dir: %w", d.id, err)
	}
	d.spawn = newSpawner()
	defer func() {
		if err != nil {
			stopCtx, cancel := context.WithTimeout(context.Background(), opts.StopTimeout+time.Second)
			defer cancel()
			_ = d.Stop(stopCtx)
		}
	}()

	sockets, err := d.bind()
	if err != nil {
		return nil, err
	}
	defer sockets.close() // the children hold their own copies

	for i, g := range p.Groups {
		hc := d.hostConfig(i, cfgJSON, sockets)
		proc, err := d.start(hc, sockets.files[i], opts)
		if err != nil {
			return nil, fmt.Errorf("deployment %s: start group %s: %w", d.id, g.Name, err)
		}
		d.processes = append(d.processes, proc)
	}
	sockets.close()

	readyCtx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()
	if err := d.waitReady(readyCtx); err != nil {
		return nil, fmt.Errorf("deployment %s of %s: %w", d.id, p.App.Name, err)
	}
	go d.watch()
	return d, nil
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sockets holds the listening sockets the deployer bound, by group.
type sockets struct {
	listen  []map[string]runtime.Listener // group → component → listener
	gateway *runtime.Listener             // in the entry group
	files   [][]*os.File                  // group → inherited files, fd 3 upward
	closers []io.Closer
}

func (s *sockets) close() {
	for _, c := range s.closers {
		_ = c.Close()
	}
	s.closers = nil
}

// bind creates every listener of the deployment.
func (d *Deployment) bind() (_ *sockets, err error) {
	p := d.topo
	s := &sockets{listen: make([]map[string]runtime.Listener, len(p.Groups)), files: make([][]*os.File, len(p.Groups))}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	add := func(g int, ep runtime.Endpoint) (runtime.Listener, error) {
		var lis net.Listener
		var err error
		if ep.Network == "unix" {
			lis, err = net.Listen("unix", ep.Addr)
			if err == nil {
				// The child serves this socket; closing the deployer's copy
				// must not remove its path.
				lis.(*net.UnixListener).SetUnlinkOnClose(false)
			}
		} else {
			lis, err = net.Listen("tcp", "127.0.0.1:0")
		}
		if err != nil {
			return runtime.Listener{}, fmt.Errorf("listen for %s: %w", ep, err)
		}
		s.closers = append(s.closers, lis)
		f, err := lis.(interface{ File() (*os.File, error) }).File()
		if err != nil {
			return runtime.Listener{}, fmt.Errorf("listener file for %s: %w", ep, err)
		}
		s.closers = append(s.closers, f)
		s.files[g] = append(s.files[g], f)
		ep.Addr = lis.Addr().String()
		// ExtraFiles[i] becomes fd 3+i in the child.
		return runtime.Listener{Endpoint: ep, FD: 2 + len(s.files[g])}, nil
	}
	for i := range p.Groups {
		s.listen[i] = map[string]runtime.Listener{}
		for _, c := range p.Exposed(i) {
			ep := runtime.Endpoint{Transport: p.Transport, Network: p.Network}
			if p.Network == "unix" {
				ep.Addr = filepath.Join(d.dir, c+".sock")
			}
			l, err := add(i, ep)
			if err != nil {
				return nil, err
			}
			s.listen[i][c] = l
		}
		if i == p.EntryGroup() {
			l, err := add(i, runtime.Endpoint{Transport: runtime.GatewayTransport, Network: "tcp"})
			if err != nil {
				return nil, err
			}
			s.gateway = &l
			d.gateway = l.Endpoint
			d.gatewayURL = "http://" + l.Addr
			if p.InProcess() {
				d.entry = l.Endpoint
			} else {
				d.entry = s.listen[i][p.Entry].Endpoint
			}
		}
	}
	return s, nil
}

// hostConfig is what group i's host needs to know.
func (d *Deployment) hostConfig(i int, cfgJSON json.RawMessage, s *sockets) *runtime.HostConfig {
	p := d.topo
	g := p.Groups[i]
	hc := &runtime.HostConfig{
		Deployment: d.id,
		App:        p.App.Name,
		Config:     cfgJSON,
		Transport:  p.Transport,
		Group:      g.Name,
		Components: g.Components,
		Listen:     s.listen[i],
		Entry:      p.Entry,
		Peers:      map[string]runtime.Endpoint{},
	}
	if i == p.EntryGroup() {
		hc.Gateway = s.gateway
	}
	for _, name := range g.Components {
		c, _ := p.Component(name)
		for _, dep := range c.Deps {
			j := p.GroupOf(dep)
			if j == i {
				continue
			}
			hc.Peers[dep] = s.listen[j][dep].Endpoint
		}
	}
	return hc
}

// start launches one child.
func (d *Deployment) start(hc *runtime.HostConfig, files []*os.File, opts Options) (*Process, error) {
	cfg, err := json.Marshal(hc)
	if err != nil {
		return nil, fmt.Errorf("encode host config: %w", err)
	}
	args := append(slices.Clone(opts.Args), "--deployment", d.id, "--group", hc.Group)
	cmd := exec.Command(opts.Executable, args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Env = append(cmd.Env, runtime.HostConfigEnv+"="+string(cfg), runtime.DeploymentEnv+"="+d.id)
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: a terminal's SIGINT goes to svclab
		// alone, which stops the children in order, and Stop can signal
		// the child and anything it started at once.
		Setpgid: true,
		// Dies with the thread that started it, which the spawner keeps
		// alive for the deployment's life: so with svclab, even on -9.
		Pdeathsig: syscall.SIGKILL,
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	var startErr error
	d.spawn.do(func() { startErr = cmd.Start() })
	_ = w.Close()
	if startErr != nil {
		_ = r.Close()
		return nil, fmt.Errorf("start %s: %w", opts.Executable, startErr)
	}
	proc := &Process{
		Name:       hc.Group,
		Components: hc.Components,
		PID:        cmd.Process.Pid,
		Listen:     map[string]runtime.Endpoint{},
		cmd:        cmd,
		tail:       newRing(opts.TailLines),
		readDone:   make(chan struct{}),
		done:       make(chan struct{}),
	}
	for c, l := range hc.Listen {
		proc.Listen[c] = l.Endpoint
	}
	if hc.Gateway != nil {
		proc.Listen["gateway"] = hc.Gateway.Endpoint
	}
	go proc.read(r, opts.Log)
	go proc.wait()
	return proc, nil
}

// read records the child's output until it closes.
func (p *Process) read(r *os.File, log io.Writer) {
	defer close(p.readDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			s := strings.TrimRight(string(line), "\r\n")
			p.tail.add(s)
			if log != nil {
				writeLine(log, "["+p.Name+"] "+s+"\n")
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

var logMu sync.Mutex

// writeLine writes whole lines, so children's output does not interleave
// mid-line.
func writeLine(w io.Writer, s string) {
	logMu.Lock()
	defer logMu.Unlock()
	_, _ = io.WriteString(w, s)
}

// wait reaps the child, then waits (briefly) for its output to drain, so
// that an exit error carries the child's last words.
func (p *Process) wait() {
	p.waitErr = p.cmd.Wait()
	select {
	case <-p.readDone:
	case <-time.After(time.Second):
		// Something the child started still holds the pipe; the tail is
		// as complete as it will get.
	}
	close(p.done)
}

// watch reports children that exit before Stop.
func (d *Deployment) watch() {
	for _, p := range d.processes {
		go func() {
			select {
			case <-p.done:
				select {
				case <-d.stopping:
				default:
					d.exited <- p
				}
			case <-d.stopping:
			}
		}()
	}
}

// waitReady health-checks every listener of every child until all report
// SERVING, a child exits, or ctx ends.
func (d *Deployment) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, p := range d.processes {
		// A child that exits fails the deployment at once, whatever the
		// health checks are doing.
		go func() {
			select {
			case <-p.done:
				cancel(p.exitError())
			case <-ctx.Done():
			}
		}()
		checks := 0
		for _, c := range slices.Sorted(maps.Keys(p.Listen)) {
			ep := p.Listen[c]
			checks++
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := checkHealth(ctx, ep); err != nil {
					cancel(fmt.Errorf("%s: %s on %s not ready: %w", p.describe(), c, ep, err))
				}
			}()
		}
		if checks == 0 {
			// No listener to probe: a group nobody calls across
			// processes. Its ready line is the only sign of life.
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.waitLine(ctx, runtime.ReadyMarker); err != nil {
					cancel(fmt.Errorf("%s: no ready line: %w", p.describe(), err))
				}
			}()
		}
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		var pe *ProcessError
		if errors.As(err, &pe) {
			return err
		}
		return &NotReadyError{Err: err, Tails: d.StderrTails()}
	}
	return nil
}

// waitLine polls the output tail for a line containing s.
func (p *Process) waitLine(ctx context.Context, s string) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		for _, l := range p.Tail() {
			if strings.Contains(l, s) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// Dial connects to the entry over its transport (the gateway's http
// transport with inproc).
func (d *Deployment) Dial(ctx context.Context, opts transport.DialOptions) (transport.Conn, error) {
	return DialEndpoint(ctx, d.entry, opts)
}

// DialEndpoint connects to ep with its transport.
func DialEndpoint(ctx context.Context, ep runtime.Endpoint, opts transport.DialOptions) (transport.Conn, error) {
	tr, err := transport.Lookup(ep.Transport)
	if err != nil {
		return nil, err
	}
	c, err := tr.Dial(ctx, ep.Network, ep.Addr, opts)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", ep, err)
	}
	return c, nil
}

// CurlExamples are commands that call the entry through the gateway, one
// per default request of the app. A body too long to paste (select's large
// array, the movie) is written to a file in the deployment's temp dir,
// which exists while the deployment runs.
func (d *Deployment) CurlExamples() []string {
	var out []string
	for _, r := range d.topo.Requests() {
		body := r.JSON()
		data := "'" + string(body) + "'"
		if len(body) > 120 {
			f := filepath.Join(d.dir, r.Name+".json")
			if err := os.WriteFile(f, body, 0o644); err == nil {
				data = "@" + f
			}
		}
		out = append(out, fmt.Sprintf("curl -s -H 'Content-Type: application/json' --data %s %s%s", data, d.gatewayURL, r.Method))
	}
	return out
}

// Stop ends every child: SIGTERM to its process group, then SIGKILL for
// any still running after StopTimeout (or when ctx ends). It removes the
// deployment's temp dir and returns an error naming the children that had
// to be killed or exited with an error. It is safe to call more than once.
func (d *Deployment) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() { d.stopErr = d.stop(ctx) })
	return d.stopErr
}

func (d *Deployment) stop(ctx context.Context) error {
	close(d.stopping)
	for _, p := range d.processes {
		signalGroup(p, syscall.SIGTERM)
	}
	grace := time.NewTimer(d.stopTimeout)
	defer grace.Stop()
	var errs []error
wait:
	for _, p := range d.processes {
		select {
		case <-p.done:
		case <-grace.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	for _, p := range d.processes {
		select {
		case <-p.done:
			if p.waitErr != nil && !killedBy(p.waitErr, syscall.SIGTERM) {
				errs = append(errs, p.exitError())
			}
			continue
		default:
		}
		signalGroup(p, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			// SIGKILL cannot be ignored; only an unkillable (D state)
			// process gets here.
		}
		errs = append(errs, fmt.Errorf("%s did not stop on SIGTERM within %s and was killed; last output:\n%s", p.describe(), d.stopTimeout, indent(p.Tail())))
	}
	if d.spawn != nil {
		d.spawn.close()
	}
	if d.dir != "" {
		if err := os.RemoveAll(d.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", d.dir, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deployment %s: stop: %w", d.id, errors.Join(errs...))
	}
	return nil
}

// signalGroup signals the process group p leads, unless p has been reaped:
// its id may then belong to someone else.
func signalGroup(p *Process, sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.PID, sig)
	}
}

func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

func indent(lines []string) string {
	if len(lines) == 0 {
		return "  (no output)"
	}
	return "  " + strings.Join(lines, "\n  ")
}

// spawner starts children from one goroutine locked to its OS thread for
// the deployment's life. Linux delivers the parent-death signal when the
// *thread* that forked the child exits, and Go may end a thread whose
// goroutine exits while locked to it (as namespace code does on purpose);
// a thread nobody else can run on is one nobody else can end.
type spawner struct {
	reqs chan func()
	once sync.Once
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan func())}
	go func() {
		goruntime.LockOSThread()
		for f := range s.reqs {
			f()
		}
		goruntime.UnlockOSThread()
	}()
	return s
}

func (s *spawner) do(f func()) {
	done := make(chan struct{})
	s.reqs <- func() { f(); close(done) }
	<-done
}

func (s *spawner) close() { s.once.Do(func() { close(s.reqs) }) }

// ring keeps the last n lines.
type ring struct {
	mu   sync.Mutex
	buf  []string
	next int
	full bool
}

func newRing(n int) *ring { return &ring{buf: make([]string, n)} }

func (r *ring) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

func (r *ring) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return slices.Clone(r.buf[:r.next])
	}
	return append(slices.Clone(r.buf[r.next:]), r.buf[:r.next]...)
}

// checkHealth calls the gRPC health service at ep over ep's transport until
// it answers SERVING or ctx ends.
func checkHealth(ctx context.Context, ep runtime.Endpoint) error {
	var conn transport.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	var last error
	backoff := 5 * time.Millisecond
	for {
		if conn == nil {
			c, err := DialEndpoint(ctx, ep, transport.DialOptions{})
			if err != nil {
				last = err
			} else {
				conn = c
			}
		}
		if conn != nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
			cancel()
			switch {
			case err != nil:
				last = err
			case resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
				return nil
			default:
				last = fmt.Errorf("health status %s", resp.GetStatus())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last health check: %v)", context.Cause(ctx), last)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}
