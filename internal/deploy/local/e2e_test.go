package local_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	_ "github.com/svclab/svclab/apps/all"
	"github.com/svclab/svclab/apps/chain"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/tempdir"
	chainpb "github.com/svclab/svclab/proto/chain"
	opspb "github.com/svclab/svclab/proto/rpcops"
	selectorpb "github.com/svclab/svclab/proto/selector"
)

// upSpecEnv makes the test binary run `svclab up` on the named spec, so the
// orphan test can kill a deployer with -9.
const upSpecEnv = "SVCLAB_TEST_UP_SPEC"

// TestMain lets Deploy re-execute this test binary as a host (and as a
// foreground deployer for the orphan test), so the tests exercise the code
// under test rather than a previously built svclab.
func TestMain(m *testing.M) {
	hostentry.RunIfChild()
	code := 0
	if path := os.Getenv(upSpecEnv); path != "" {
		code = runUp(path)
	} else {
		code = m.Run()
	}
	// As svclab's commands do when they end (cmd/svclab/clean.go): the
	// process's own temp root goes with it.
	_ = tempdir.RemoveOwn()
	os.Exit(code)
}

func runUp(path string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := func() error {
		s, err := spec.Load(path)
		if err != nil {
			return err
		}
		deployer, topo, err := deploy.Resolve(s)
		if err != nil {
			return err
		}
		d, err := deployer.Deploy(ctx, topo, deploy.Options{})
		if err != nil {
			return err
		}
		return deploy.Foreground(ctx, d, os.Stdout)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "up:", err)
		return 1
	}
	return 0
}

// slowCall is a call that makes the app's last component sleep, for the
// deadline test.
type slowCall struct {
	method    string
	req       proto.Message
	resp      func() proto.Message
	component func(p *runtime.Topology) string
}

var slowCalls = map[string]slowCall{
	"chain": {
		method:    chainpb.Hop_Call_FullMethodName,
		req:       &chainpb.CallRequest{SleepMicros: 5_000_000},
		resp:      func() proto.Message { return new(chainpb.CallResponse) },
		component: func(p *runtime.Topology) string { return chain.HopName(p.Config.(*chain.Config).Hops) },
	},
	"select": {
		method:    selectorpb.Frontend_Select_FullMethodName,
		req:       &selectorpb.SelectRequest{Values: []int32{1, 2, 3}, SleepMicros: 5_000_000},
		resp:      func() proto.Message { return new(selectorpb.SelectResponse) },
		component: func(*runtime.Topology) string { return "selector" },
	},
	"rpcops": {
		method:    opspb.Frontend_Long_FullMethodName,
		req:       &opspb.LongRequest{Value: 1, SleepMicros: 5_000_000},
		resp:      func() proto.Message { return new(opspb.LongResponse) },
		component: func(*runtime.Topology) string { return "ops" },
	},
}

func writeSpec(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func resolve(t *testing.T, body string) *runtime.Topology {
	t.Helper()
	s, err := spec.Load(writeSpec(t, body))
	if err != nil {
		t.Fatalf("load spec: %v", err)
	}
	p, err := runtime.Resolve(s)
	if err != nil {
		t.Fatalf("resolve spec: %v", err)
	}
	return p
}

// TestEndToEnd deploys every app over every transport as a monolith and
// fully split, and checks answers, the gateway, deadlines and shutdown.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	transports := runtime.Transports()
	for _, want := range []string{"inproc", "grpc", "http", "netrpc", "protorpc"} {
		if !slices.Contains(transports, want) {
			t.Errorf("transport %s is not registered (have %v)", want, transports)
		}
	}
	for _, app := range []string{"chain", "select", "rpcops"} {
		for _, tr := range transports {
			for _, placement := range []string{"monolith", "split"} {
				if tr == "inproc" && placement == "split" {
					continue
				}
				t.Run(app+"/"+tr+"/"+placement, func(t *testing.T) {
					t.Parallel()
					testDeployment(t, app, tr, placement)
				})
			}
		}
	}
}

func testDeployment(t *testing.T, app, tr, placement string) {
	src := fmt.Sprintf("[app]\nname = %q\n[deploy]\ntransport = %q\nplacement = %q\n", app, tr, placement)
	if placement == "monolith" && tr != "inproc" {
		// Split deployments use the default, loopback TCP; monoliths
		// cover unix sockets without doubling the matrix.
		src += "network = \"unix\"\n"
	}
	p := resolve(t, src)
	if want := map[string]string{"split": "tcp", "monolith": "unix"}[placement]; tr != "inproc" && p.Network != want {
		t.Fatalf("network %q, want %q", p.Network, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Through the registry, as the runner and `svclab up` deploy.
	d, err := localDeployer(t).Deploy(ctx, p, deploy.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = d.Stop(context.Background())
		}
	}()
	if got, want := len(d.Processes()), len(p.Groups); got != want {
		t.Fatalf("%d processes, want one per group (%d)", got, want)
	}
	checkProcesses(t, ctx, d)
	checkDescribe(t, d)

	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatalf("dial entry: %v", err)
	}
	defer conn.Close()

	// Every default request, through the transport's own client.
	for _, r := range p.Requests() {
		if _, err := r.Invoke(ctx, conn); err != nil {
			t.Errorf("%s over %s: %v", r.Name, d.Entry(), err)
		}
	}
	// And through the HTTP/JSON gateway, as curl would.
	for _, r := range p.Requests() {
		if err := postGateway(ctx, d.GatewayURL(), r); err != nil {
			t.Errorf("%s through the gateway: %v", r.Name, err)
		}
	}
	if app == "chain" {
		// The large payload crosses every hop: 300,000 characters each.
		if err := callLarge(ctx, conn, 3); err != nil {
			t.Error(err)
		}
	}

	checkDeadline(t, d, app, conn)

	stopped = true
	if err := d.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
	for _, proc := range d.Processes() {
		if pid := proc.Info().PID; alive(pid) {
			t.Errorf("pid %d still alive after Stop", pid)
		}
		if u, err := proc.Resources().Sample(ctx); err == nil {
			t.Errorf("%s: resources read %+v after Stop, want an error", proc.Info(), u)
		}
	}
}

// callLarge calls a chain of hops with the large payload and checks the
// answer: 300,000 characters from each hop.
func callLarge(ctx context.Context, conn transport.Conn, hops int) error {
	big := runtime.Request{
		Name: "large", Method: chainpb.Hop_Call_FullMethodName,
		Message:     &chainpb.CallRequest{Payload: chain.Large},
		NewResponse: func() proto.Message { return new(chainpb.CallResponse) },
	}
	resp, err := big.Invoke(ctx, conn)
	if err != nil {
		return fmt.Errorf("large payload: %w", err)
	}
	if got, want := resp.(*chainpb.CallResponse).GetText(), chain.Expected(hops, chain.Large); got != want {
		return fmt.Errorf("large payload: %d characters, want %d", len(got), len(want))
	}
	return nil
}

func localDeployer(t *testing.T) deploy.Deployer {
	t.Helper()
	dl, err := deploy.Lookup(local.Name)
	if err != nil {
		t.Fatalf("the local deployer is not registered: %v", err)
	}
	return dl
}

// checkProcesses checks that each process says which group it hosts and
// reads its own resource counters.
func checkProcesses(t *testing.T, ctx context.Context, d deploy.Deployment) {
	t.Helper()
	p := d.Topology()
	for i, proc := range d.Processes() {
		info, g := proc.Info(), p.Groups[i]
		if info.Name != g.Name || info.Group != g.Name || info.Role != deploy.RoleHost || !slices.Equal(info.Components, g.Components) || !alive(info.PID) {
			t.Errorf("process %d is %+v, want a live host of group %s (components %v)", i, info, g.Name, g.Components)
		}
		u, err := proc.Resources().Sample(ctx)
		if err != nil {
			t.Errorf("%s: resources: %v", info, err)
			continue
		}
		// A Go host holds megabytes; a reading of the wrong process (or
		// none) would not.
		if u.RSSBytes < 1<<20 || u.CPUSeconds < 0 {
			t.Errorf("%s: resources %+v, want RSS of a running host", info, u)
		}
	}
}

// checkDescribe checks that what `svclab up` prints names every process,
// its listeners, the entry and the gateway.
func checkDescribe(t *testing.T, d deploy.Deployment) {
	t.Helper()
	var b strings.Builder
	deploy.Describe(&b, d)
	out := b.String()
	want := []string{"deployment " + d.ID() + ": app " + d.Topology().App.Name, "entry:   " + d.Entry().String(), "gateway: " + d.GatewayURL()}
	want = append(want, d.CurlExamples()...)
	for _, proc := range d.Processes() {
		info := proc.Info()
		row := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(info.Name) + ` +` + strconv.Itoa(info.PID) + ` `)
		if !row.MatchString(out) {
			t.Errorf("description has no row for %s with its pid:\n%s", info.Name, out)
		}
		for c, ep := range proc.Listeners() {
			want = append(want, c+"="+ep.String())
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("description lacks %q:\n%s", w, out)
		}
	}
}

// checkDeadline calls with a short deadline a method whose last component
// sleeps, and checks that the client gets DeadlineExceeded and the sleeping
// component, possibly processes away, saw its context end.
//
// The server that holds the propagated deadline resets the stream when it
// passes, at about the instant the client's own timer fires, and on a
// busy machine the reset can reach the client first: as Canceled from
// grpcio (RST_STREAM CANCEL), or as Unavailable through nginx, which turns
// a reset from upstream into 502. Either is right when it comes at the
// deadline.
func checkDeadline(t *testing.T, d deploy.Deployment, app string, conn transport.Conn) {
	t.Helper()
	sc := slowCalls[app]
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	err := conn.Invoke(ctx, sc.method, sc.req, sc.resp())
	cancel()
	el := time.Since(start)
	switch code := status.Code(err); {
	case code == codes.DeadlineExceeded:
	case (code == codes.Canceled || code == codes.Unavailable) && el >= 450*time.Millisecond:
		t.Logf("slow call: %v after %s: the server's reset at the deadline came first", err, el)
	default:
		t.Errorf("slow call with a 500ms deadline: %v (code %s) after %s, want DeadlineExceeded", err, code, el)
	}
	if el > 3*time.Second {
		t.Errorf("slow call took %s despite a 500ms deadline", el)
	}
	checkSleeperSawDeadline(t, d, app)
}

// checkSleeperSawDeadline checks that the component that sleeps in app's
// slow call saw its context end, with a deadline that had crossed every
// hop to it.
func checkSleeperSawDeadline(t *testing.T, d deploy.Deployment, app string) {
	t.Helper()
	sc := slowCalls[app]
	p := d.Topology()
	comp := sc.component(p)
	proc := d.Processes()[p.GroupOf(comp)]
	// The sleeper logs when its context ends; it may log a little after the
	// client gave up, so poll its output for a bounded time.
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, l := range proc.Tail() {
			if strings.Contains(l, comp+": ") && strings.Contains(l, runtime.CutShortMarker) {
				if strings.Contains(l, "deadline on arrival: none") {
					t.Errorf("%s saw the cancellation but no deadline: %s", comp, l)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("%s (%s) never saw its context end; its output:\n%s", comp, proc.Info(), strings.Join(proc.Tail(), "\n"))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func postGateway(ctx context.Context, base string, r runtime.Request) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+r.Method, bytes.NewReader(r.JSON()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %s: %.200s", resp.Status, body)
	}
	m := r.NewResponse()
	if err := protojson.Unmarshal(body, m); err != nil {
		return fmt.Errorf("decode %.100s: %w", body, err)
	}
	if r.Check != nil {
		return r.Check(m)
	}
	return nil
}

func alive(pid int) bool {
	// A zombie has exited; only a process that still runs counts.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// deploymentProcs lists the live processes whose environment marks them as
// part of deployment id.
func deploymentProcs(id string) []int {
	marker := []byte(runtime.DeploymentEnv + "=" + id + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, marker) {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestNoOrphans starts a foreground deployer (`svclab up`) in a child
// process, stops it with SIGTERM or kills it with -9, and checks that no
// process of its deployment survives.
func TestNoOrphans(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			testNoOrphans(t, sig, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\n", 3)
		})
	}
}

// testNoOrphans deploys src with `svclab up` in a child, signals the
// child, and checks that none of the deployment's want processes outlive
// it.
func testNoOrphans(t *testing.T, sig syscall.Signal, src string, want int) {
	cmd, id, stderr := startUp(t, src)
	if n := len(deploymentProcs(id)); n != want {
		t.Fatalf("%d processes of deployment %s before the signal, want %d", n, id, want)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	if sig == syscall.SIGTERM && werr != nil {
		t.Errorf("up exited with %v after SIGTERM, want status 0; stderr:\n%s", werr, stderr.String())
	}
	if sig == syscall.SIGKILL {
		// Nothing was left to remove the deployment's temp dir;
		// the next svclab to start does, as this sweep.
		if _, err := tempdir.Sweep(""); err != nil {
			t.Error(err)
		}
		if dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempdir.Prefix+"*", id+"-*")); len(dirs) > 0 {
			t.Errorf("the sweep left %v of the killed deployer", dirs)
		}
	}
	awaitNoProcs(t, id)
}

// awaitNoProcs fails unless every process of deployment id has ended
// within 10 s: the kernel's parent-death signal kills them at once, but a
// loaded machine can take a while to run their exit.
func awaitNoProcs(t *testing.T, id string) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for {
		left := deploymentProcs(id)
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("processes %v of deployment %s outlived the deployer", left, id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startUp runs `svclab up` (this test binary, see TestMain) on a spec
// until it reports its deployment, and returns it, the deployment's id and
// its stderr so far; the test's end kills it if it still runs.
func startUp(t *testing.T, specBody string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), upSpecEnv+"="+writeSpec(t, specBody))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	id, err := readDeploymentID(out, 30*time.Second)
	if err != nil {
		t.Fatalf("up did not report a deployment: %v; stderr:\n%s", err, stderr.String())
	}
	return cmd, id, stderr
}

var deploymentLine = regexp.MustCompile(`^deployment ([0-9a-f]+): `)

// readDeploymentID reads up's output until it is ready, and returns the
// deployment id it printed. The rest of the output is drained in the
// background so up never blocks on a full pipe.
func readDeploymentID(r io.Reader, timeout time.Duration) (string, error) {
	type result struct {
		id  string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		sc := bufio.NewScanner(r)
		id := ""
		for sc.Scan() {
			if m := deploymentLine.FindStringSubmatch(sc.Text()); m != nil {
				id = m[1]
			}
			if strings.HasPrefix(sc.Text(), "Ctrl-C") {
				ch <- result{id: id}
				_, _ = io.Copy(io.Discard, r)
				return
			}
		}
		ch <- result{err: fmt.Errorf("output ended before ready (%v)", sc.Err())}
	}()
	select {
	case res := <-ch:
		if res.err == nil && res.id == "" {
			res.err = errors.New("no deployment line")
		}
		return res.id, res.err
	case <-time.After(timeout):
		return "", fmt.Errorf("not ready after %s", timeout)
	}
}

// TestCrashAtStart makes one component fail while its host builds it and
// checks that Deploy fails naming the group, its exit status and its
// output, and leaves nothing running.
func TestCrashAtStart(t *testing.T) {
	tests := []struct {
		app, transport, placement, fail, group string
	}{
		{"chain", "grpc", "split", "hop2", "hop2"},
		{"chain", "http", "monolith", "hop3", "hop1+hop2+hop3"},
		{"rpcops", "grpc", "split", "ops", "ops"},
	}
	for _, tc := range tests {
		t.Run(tc.app+"/"+tc.placement+"/"+tc.fail, func(t *testing.T) {
			t.Parallel()
			p := resolve(t, fmt.Sprintf("[app]\nname = %q\n[deploy]\ntransport = %q\nplacement = %q\n", tc.app, tc.transport, tc.placement))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			d, err := local.Deploy(ctx, p, local.Options{Options: deploy.Options{Env: []string{runtime.FailComponentEnv + "=" + tc.fail}}})
			if err == nil {
				_ = d.Stop(ctx)
				t.Fatal("deploy succeeded with a component that fails at start")
			}
			var ee *deploy.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v (%T) is not a *deploy.ExitError", err, err)
			}
			if ee.Process.Group != tc.group || ee.Status != "exit status 1" {
				t.Errorf("group %q status %q, want group %q status \"exit status 1\"", ee.Process.Group, ee.Status, tc.group)
			}
			tail := strings.Join(ee.Tail, "\n")
			if !strings.Contains(tail, "component "+tc.fail+": failing at start") {
				t.Errorf("output tail does not say why:\n%s", tail)
			}
			for _, s := range []string{"group " + tc.group, "exit status 1", "failing at start"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error does not mention %q: %v", s, err)
				}
			}
			m := regexp.MustCompile(`deployment ([0-9a-f]+)`).FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error does not name the deployment: %v", err)
			}
			if left := deploymentProcs(m[1]); len(left) > 0 {
				t.Errorf("processes %v left running after a failed deploy", left)
			}
		})
	}
}

// TestSpecErrors checks that a bad deployer, placement or transport fails
// in deploy.Resolve, before anything can start, with the key and line.
func TestSpecErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, spec, key string
		line            int
		msg             string
	}{
		{"unknown component", `[app]
name = "chain"
[deploy]
placement = "p"
[deploy.placements]
p = [["hop1", "hop2"], ["hop3", "hop9"]]
`, "deploy.placements.p", 6, `unknown component "hop9"`},
		{"placed twice", `[app]
name = "select"
[deploy]
placement = "p"
[deploy.placements]
p = [["frontend", "selector"], ["selector"]]
`, "deploy.placements.p", 6, `component "selector" is placed twice`},
		{"not placed", `[app]
name = "rpcops"
[deploy]
placement = "p"
[deploy.placements]
p = [["frontend"]]
`, "deploy.placements.p", 6, "ops not placed"},
		{"unknown transport", `[app]
name = "chain"

[deploy]
transport = "carrier-pigeon"
`, "deploy.transport", 5, `unknown transport "carrier-pigeon"`},
		{"unknown placement", `[app]
name = "chain"
[deploy]
placement = "halves"
`, "deploy.placement", 4, `unknown placement "halves"`},
		{"inproc split", `[app]
name = "chain"
[deploy]
transport = "inproc"
placement = "split"
`, "deploy.transport", 4, "cannot cross processes"},
		{"bad app value", `[app]
name = "chain"
hops = 0
`, "app.hops", 3, "between 1 and"},
		{"unknown app", `[app]
name = "nope"
`, "app.name", 2, `unknown app "nope"`},
		{"unknown deployer", `[app]
name = "chain"
[deploy]
deployer = "cloud"
transport = "carrier-pigeon"
`, "deploy.deployer", 4, `unknown deployer "cloud" (known: local)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Load(writeSpec(t, tc.spec))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			_, _, err = deploy.Resolve(s)
			if err == nil {
				t.Fatal("resolve succeeded")
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *spec.Error", err, err)
			}
			if se.Key != tc.key || se.Line != tc.line || !strings.Contains(se.Error(), tc.msg) {
				t.Errorf("got %q (key %q, line %d), want key %q line %d containing %q", se.Error(), se.Key, se.Line, tc.key, tc.line, tc.msg)
			}
		})
	}
}
