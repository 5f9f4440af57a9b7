package local_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	chainpb "github.com/svclab/svclab/proto/chain"
)

var servedRE = regexp.MustCompile(regexp.QuoteMeta(runtime.ServedMarker) + ` (\d+) calls`)

// served reads, from a stopped process's last lines, how many calls it
// admitted.
func served(t *testing.T, p deploy.Process) int {
	t.Helper()
	for _, l := range p.Tail() {
		if m := servedRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	t.Fatalf("%s logged no served count; last lines:\n%s", p.Info(), strings.Join(p.Tail(), "\n"))
	return 0
}

// loadResult is what callLoad saw: calls ok and failed, and the first
// few failures' errors (status code and message), for the report.
type loadResult struct {
	ok, failed int64

	mu   sync.Mutex
	errs []string
}

// maxLoadErrs bounds the errors a loadResult keeps.
const maxLoadErrs = 5

func (r *loadResult) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed++
	if len(r.errs) < maxLoadErrs {
		st := status.Convert(err)
		r.errs = append(r.errs, fmt.Sprintf("%s %s: %s", time.Now().Format("15:04:05.000"), st.Code(), st.Message()))
	}
}

// String reports the counts and, when some failed, the first errors.
func (r *loadResult) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := fmt.Sprintf("%d calls ok, %d failed", r.ok, r.failed)
	if len(r.errs) > 0 {
		s += "; first errors:\n  " + strings.Join(r.errs, "\n  ")
	}
	return s
}

// callLoad calls the entry's first default request from workers concurrent
// callers until stop is closed; it returns calls ok and failed.
func callLoad(p *runtime.Topology, conn grpc.ClientConnInterface, workers int, stop <-chan struct{}) (ok, failed int64) {
	res := load(p, conn, workers, stop)
	return res.ok, res.failed
}

// load is callLoad that also keeps the first few errors.
func load(p *runtime.Topology, conn grpc.ClientConnInterface, workers int, stop <-chan struct{}) *loadResult {
	r := p.Requests()[0]
	var wg sync.WaitGroup
	var nOK atomic.Int64
	res := &loadResult{}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := r.Invoke(ctx, conn)
				cancel()
				if err != nil {
					res.fail(err)
				} else {
					nOK.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	res.ok = nOK.Load()
	return res
}

func groupProcs(d *local.Deployment, group string) []deploy.Process {
	var out []deploy.Process
	for _, p := range d.Processes() {
		if p.Info().Group == group {
			out = append(out, p)
		}
	}
	return out
}

// TestReplicasSpread deploys chain with hop2 in 3 replicas: hop1's calls
// spread over them within ±10% of an even share, on grpc and http, with
// each balancer.
func TestReplicasSpread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tr, balancer string }{
		{"grpc", "round_robin"}, {"http", "round_robin"}, {"grpc", "least_outstanding"},
	} {
		t.Run(tc.tr+"/"+tc.balancer, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \""+tc.tr+"\"\nbalancer = \""+tc.balancer+"\"\n[deploy.replicas]\nhop2 = 3\n")
			ctx, d := deployFor(t, p)
			hop2 := groupProcs(d, "hop2")
			if len(hop2) != 3 || len(d.Processes()) != 5 {
				t.Fatalf("processes %v, want hop1, 3 of hop2, hop3", d.Processes())
			}
			for i, pr := range hop2 {
				if want := "hop2#" + strconv.Itoa(i); pr.Info().Name != want {
					t.Errorf("replica %d named %q, want %q", i, pr.Info().Name, want)
				}
			}
			conn := dialEntry(t, ctx, d)
			stop := make(chan struct{})
			time.AfterFunc(time.Second, func() { close(stop) })
			ok, failed := callLoad(p, conn, 4, stop)
			if failed > 0 || ok < 60 {
				t.Fatalf("%d calls ok, %d failed", ok, failed)
			}
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			share := float64(ok) / 3
			total := 0
			for _, pr := range hop2 {
				n := served(t, pr)
				total += n
				// The health checks of the deployer count too: a few.
				if float64(n) < 0.9*share || float64(n) > 1.1*share+5 {
					t.Errorf("%s served %d of %d calls, want %.0f ± 10%%", pr.Info().Name, n, ok, share)
				}
			}
			if int64(total) < ok {
				t.Errorf("hop2 replicas served %d calls, the client made %d", total, ok)
			}
		})
	}
}

// TestReplicaKilled kills one of 3 replicas of hop2 with SIGKILL under
// load: the calls lost are at most those in flight to it (one per client
// worker), the deployment reports the exit, and the load goes on over the
// other two.
func TestReplicaKilled(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \""+tr+"\"\n[deploy.replicas]\nhop2 = 3\n")
			ctx, d := deployFor(t, p)
			conn := dialEntry(t, ctx, d)
			victim := groupProcs(d, "hop2")[1]
			const workers = 4
			stop := make(chan struct{})
			time.AfterFunc(500*time.Millisecond, func() {
				_ = syscall.Kill(victim.Info().PID, syscall.SIGKILL)
			})
			time.AfterFunc(1500*time.Millisecond, func() { close(stop) })
			res := load(p, conn, workers, stop)
			t.Log(res)
			if res.failed > workers {
				t.Errorf("%s; want at most %d failed (those in flight to the killed replica)", res, workers)
			}
			if res.ok < 100 {
				t.Errorf("only %d calls ok", res.ok)
			}
			select {
			case ex := <-d.Exited():
				if ex.Info().Name != victim.Info().Name {
					t.Errorf("exited %s, want %s", ex.Info().Name, victim.Info().Name)
				}
			case <-time.After(5 * time.Second):
				t.Error("the deployment did not report the killed replica")
			}
			if n, _ := d.Replicas("hop2"); n != 2 {
				t.Errorf("hop2 has %d live replicas, want 2", n)
			}
		})
	}
}

// TestScale scales hop2 from 1 to 3 replicas and back to 1 under load: no
// call fails, the new replicas take calls without hop1 restarting, and the
// replicas scaled away are drained before they stop.
func TestScale(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \""+tr+"\"\n[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 50\n")
			ctx, d := deployFor(t, p)
			hop1 := groupProcs(d, "hop1")[0]
			conn := dialEntry(t, ctx, d)
			stop := make(chan struct{})
			var added []deploy.Process
			scaleErr := make(chan error, 1)
			go func() {
				defer close(stop)
				time.Sleep(300 * time.Millisecond)
				if err := d.Scale(ctx, "hop2", 3); err != nil {
					scaleErr <- err
					return
				}
				added = groupProcs(d, "hop2")[1:]
				time.Sleep(700 * time.Millisecond)
				scaleErr <- d.Scale(ctx, "hop2", 1)
				time.Sleep(300 * time.Millisecond)
			}()
			res := load(p, conn, 4, stop)
			if err := <-scaleErr; err != nil {
				t.Fatal(err)
			}
			if res.failed > 0 || res.ok < 50 {
				t.Errorf("while scaling: %s; want none failed", res)
			}
			if n, _ := d.Replicas("hop2"); n != 1 || len(groupProcs(d, "hop2")) != 1 {
				t.Errorf("hop2 has %d live replicas, %d processes; want 1", n, len(groupProcs(d, "hop2")))
			}
			if len(added) != 2 {
				t.Fatalf("scaled up to %d processes, want 3", len(added)+1)
			}
			for _, pr := range added {
				<-pr.Done()
				if pr.Exit().Status != "exit status 0" {
					t.Errorf("%s ended %s, want a clean stop", pr.Info().Name, pr.Exit().Status)
				}
				if n := served(t, pr); n == 0 {
					t.Errorf("%s, added while hop1 ran, got no call", pr.Info().Name)
				}
			}
			select {
			case <-hop1.Done():
				t.Error("hop1 exited")
			default:
			}
			select {
			case ex := <-d.Exited():
				t.Errorf("%s reported as exited: scaling away is no crash", ex.Info().Name)
			default:
			}
		})
	}
}

// TestAutoscaler puts a step load on chain's hop2, which has an autoscaler
// with a short sync period and scale-down window: it scales up under the
// load and back to min once the load stops and the window has passed, and
// every decision is recorded.
func TestAutoscaler(t *testing.T) {
	p := resolve(t, `[app]
name = "chain"
payload = "large"
[deploy]
placement = "split"
[deploy.autoscale.hop2]
min = 1
max = 3
cpu_target = 5
sync_period = "500ms"
scale_down_window = "2s"
`)
	ctx, d := deployFor(t, p)
	conn := dialEntry(t, ctx, d)

	stepStart := time.Now()
	stop := make(chan struct{})
	peak := 1
	var firstUp time.Duration
	go func() {
		defer close(stop)
		for time.Since(stepStart) < 10*time.Second {
			n, _ := d.Replicas("hop2")
			if n > 1 && firstUp == 0 {
				firstUp = time.Since(stepStart)
			}
			peak = max(peak, n)
			if peak > 1 && time.Since(stepStart) > 3*time.Second {
				return // scaled up, and the new replicas have served a while
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	ok, failed := callLoad(p, conn, 4, stop)
	stepEnd := time.Now()
	if peak < 2 {
		t.Fatalf("hop2 never scaled up under the step load (%d calls ok); decisions:\n%s", ok, events(d))
	}
	t.Logf("step load: %d calls ok, %d failed; reaction time %s (sync period 500ms: the first scale-up's replicas serving), peak %d replicas",
		ok, failed, firstUp.Round(time.Millisecond), peak)
	if failed > 0 {
		t.Errorf("%d calls failed while scaling up", failed)
	}

	var down time.Time
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n, _ := d.Replicas("hop2"); n == 1 {
			down = time.Now()
			break
		}
	}
	if down.IsZero() {
		t.Fatalf("hop2 did not scale back down to 1 within 15s of the load's end; decisions:\n%s", events(d))
	}
	t.Logf("back to 1 replica %s after the load ended (window 2s)", down.Sub(stepEnd).Round(time.Millisecond))
	evs := d.ScaleEvents()
	if len(evs) < 4 {
		t.Fatalf("%d decisions recorded", len(evs))
	}
	// The window: a scale down goes no lower than any proposal of the
	// 2 s before it, and at least one was held back by it.
	held := false
	for _, e := range evs {
		held = held || e.Reason == "stabilization window"
		if e.Desired >= e.Current {
			continue
		}
		for _, f := range evs {
			if !f.Time.After(e.Time) && e.Time.Sub(f.Time) < 2*time.Second && f.Proposed > e.Desired {
				t.Errorf("scaled down to %d at %s, though %d was proposed %s before", e.Desired,
					e.Time.Format("15:04:05.000"), f.Proposed, e.Time.Sub(f.Time).Round(time.Millisecond))
			}
		}
	}
	if !held {
		t.Errorf("no decision was held by the stabilization window; decisions:\n%s", events(d))
	}
	ups, downs := 0, 0
	for _, e := range evs {
		if e.Group != "hop2" || e.Metric != "cpu" || e.Target != 5 {
			t.Errorf("decision %+v", e)
		}
		switch {
		case e.Desired > e.Current:
			ups++
		case e.Desired < e.Current:
			downs++
		}
	}
	if ups == 0 || downs == 0 {
		t.Errorf("%d scale-ups and %d scale-downs recorded, want some of each", ups, downs)
	}
	select {
	case ex := <-d.Exited():
		t.Errorf("%s reported as exited", ex.Info().Name)
	default:
	}
}

func events(d *local.Deployment) string {
	var b strings.Builder
	for _, e := range d.ScaleEvents() {
		b.WriteString(fmt.Sprintf("  %s %s %d%% of %d%%: %d → %d (%s) %s\n", e.Time.Format("15:04:05.000"), e.Metric, e.Utilization, e.Target, e.Current, e.Desired, e.Reason, e.Error))
	}
	return b.String()
}

// deployFor deploys p for one test, stopped at its end, and returns a
// context bounding the test's calls.
func deployFor(t *testing.T, p *runtime.Topology) (context.Context, *local.Deployment) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	d, err := local.Deploy(ctx, p, local.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	return ctx, d
}

// dialEntry connects to the entry, closed at the test's end.
func dialEntry(t *testing.T, ctx context.Context, d *local.Deployment) transport.Conn {
	t.Helper()
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestEntryReplicas runs the whole of chain (monolith) as 2 replicas: the
// client from Dial spreads its calls over both within ±10%, on grpc and
// http, and a third replica added by Scale gets calls without a new Dial.
func TestEntryReplicas(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\ntransport = \""+tr+"\"\n[deploy.replicas]\nhop1 = 2\n")
			ctx, d := deployFor(t, p)
			conn := dialEntry(t, ctx, d)
			stop := make(chan struct{})
			time.AfterFunc(time.Second, func() { close(stop) })
			ok, failed := callLoad(p, conn, 4, stop)
			if failed > 0 || ok < 60 {
				t.Fatalf("%d calls ok, %d failed", ok, failed)
			}
			if err := d.Scale(ctx, "hop1+hop2+hop3", 3); err != nil {
				t.Fatal(err)
			}
			stop2 := make(chan struct{})
			time.AfterFunc(500*time.Millisecond, func() { close(stop2) })
			ok2, failed2 := callLoad(p, conn, 4, stop2)
			if failed2 > 0 {
				t.Fatalf("%d calls failed after the scale up", failed2)
			}
			procs := d.Processes()
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if len(procs) != 3 {
				t.Fatalf("processes %v", procs)
			}
			// The first second: an even share of ok over the first two;
			// the rest over three.
			n0, n1, n2 := served(t, procs[0]), served(t, procs[1]), served(t, procs[2])
			share := float64(ok)/2 + float64(ok2)/3
			for i, n := range []int{n0, n1} {
				if float64(n) < 0.9*share || float64(n) > 1.1*share+5 {
					t.Errorf("replica %d served %d calls, want %.0f ± 10%% (%d + %d calls in all)", i, n, share, ok, ok2)
				}
			}
			if float64(n2) < 0.9*float64(ok2)/3 {
				t.Errorf("the replica added by Scale served %d of the last %d calls, want about a third", n2, ok2)
			}
		})
	}
}

// TestScaleDownDrains scales hop3 from 2 replicas to 1 while slow calls
// are in flight on both: every call finishes, the replica scaled away
// stops only after its calls have answered, and it exits cleanly.
func TestScaleDownDrains(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntransport = \""+tr+"\"\n[deploy.replicas]\nhop3 = 2\n")
			ctx, d := deployFor(t, p)
			conn := dialEntry(t, ctx, d)
			victim := groupProcs(d, "hop3")[1]
			const calls, sleep = 6, 800 * time.Millisecond
			errs := make(chan error, calls)
			for range calls {
				go func() {
					_, err := chainpb.NewHopClient(conn).Call(ctx, &chainpb.CallRequest{SleepMicros: sleep.Microseconds()})
					errs <- err
				}()
			}
			time.Sleep(200 * time.Millisecond) // the calls are at hop3
			start := time.Now()
			if err := d.Scale(ctx, "hop3", 1); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			for range calls {
				if err := <-errs; err != nil {
					t.Errorf("a call in flight during the scale down failed: %v", err)
				}
			}
			select {
			case <-victim.Done():
			default:
				t.Fatal("Scale returned before the replica it removed exited")
			}
			if st := victim.Exit().Status; st != "exit status 0" {
				t.Errorf("%s ended %s, want a clean stop", victim.Info().Name, st)
			}
			// It held its calls (half of them) until they answered.
			if took < sleep/2 {
				t.Errorf("the scale down took %s: it did not wait for the calls in flight", took)
			}
			if n := served(t, victim); n < 1 {
				t.Errorf("%s served %d calls, want its share of the slow ones", victim.Info().Name, n)
			}
		})
	}
}
