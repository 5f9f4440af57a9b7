package balancer_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/runtime/balancer"
	"github.com/svclab/svclab/internal/spec"
)

func TestPoliciesMatchSpec(t *testing.T) {
	for _, name := range spec.Balancers {
		if balancer.Policies[name] == nil {
			t.Errorf("deploy.balancer %q has no picker", name)
		}
	}
	if len(balancer.Policies) != len(spec.Balancers) {
		t.Errorf("pickers %d, spec values %d", len(balancer.Policies), len(spec.Balancers))
	}
}

// load makes calls from workers concurrent callers until stop is closed and
// returns how many succeeded and failed.
func load(b *balancer.Balancer, workers int, stop <-chan struct{}) (ok, failed int64) {
	var wg sync.WaitGroup
	var nOK, nFail atomic.Int64
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
				err := call(ctx, b, "hi")
				cancel()
				if err != nil {
					nFail.Add(1)
				} else {
					nOK.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return nOK.Load(), nFail.Load()
}

// TestSpreadConcurrent checks that concurrent callers spread their calls
// within ±10% of an even share over 3 endpoints, with round robin on every
// transport. Least-outstanding sends more to whichever endpoint answers
// faster at the moment, which is its point; TestLeastOutstandingAvoidsBusy
// checks its even spread when nothing queues.
func TestSpreadConcurrent(t *testing.T) {
	for _, policy := range []string{spec.BalancerRoundRobin} {
		for _, tr := range networkTransports(t) {
			t.Run(policy+"/"+tr.Name(), func(t *testing.T) {
				ss := []*server{startServer(t, tr), startServer(t, tr), startServer(t, tr)}
				b := balancer.New("echo", balancer.Options{Picker: balancer.Policies[policy]})
				defer b.Close()
				update(t, b, ss...)
				// Until 600 calls have been served, or 5 s.
				stop := make(chan struct{})
				go func() {
					defer close(stop)
					for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
						if ss[0].calls.Load()+ss[1].calls.Load()+ss[2].calls.Load() >= 600 {
							return
						}
					}
				}()
				ok, failed := load(b, 6, stop)
				if failed > 0 || ok < 90 {
					t.Fatalf("%d calls ok, %d failed", ok, failed)
				}
				share := float64(ok) / 3
				for i, s := range ss {
					if got := float64(s.calls.Load()); got < 0.9*share || got > 1.1*share {
						t.Errorf("endpoint %d got %.0f of %d calls, want %.0f ± 10%%", i, got, ok, share)
					}
				}
			})
		}
	}
}

// TestLeastOutstandingAvoidsBusy holds one call on an endpoint: every later
// call goes to the others.
func TestLeastOutstandingAvoidsBusy(t *testing.T) {
	tr := networkTransports(t)[0]
	ss := []*server{startServer(t, tr), startServer(t, tr), startServer(t, tr)}
	b := balancer.New("echo", balancer.Options{Picker: balancer.LeastOutstanding})
	defer b.Close()
	update(t, b, ss...)
	held := make(chan error, 1)
	go func() { held <- call(context.Background(), b, hold) }()
	busy := -1
	for deadline := time.Now().Add(5 * time.Second); busy < 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		busy = slices.IndexFunc(ss, func(s *server) bool { return s.active.Load() == 1 })
	}
	if busy < 0 {
		t.Fatal("the held call reached no endpoint")
	}
	for range 40 {
		if err := call(context.Background(), b, "hi"); err != nil {
			t.Fatal(err)
		}
	}
	if got := ss[busy].calls.Load(); got != 1 {
		t.Errorf("busy endpoint got %d calls, want only the held one", got)
	}
	for i, s := range ss {
		if i != busy && s.calls.Load() != 20 {
			t.Errorf("idle endpoint %d got %d calls, want 20 (ties go to the endpoint picked least)", i, s.calls.Load())
		}
	}
	close(ss[busy].release)
	if err := <-held; err != nil {
		t.Error(err)
	}
}

// TestKilledEndpoint kills one of 3 endpoints under concurrent load: the
// calls lost are at most those in flight to it when it died (one per
// caller), and the rest of the load carries on over the other two.
func TestKilledEndpoint(t *testing.T) {
	for _, policy := range spec.Balancers {
		for _, tr := range networkTransports(t) {
			t.Run(policy+"/"+tr.Name(), func(t *testing.T) {
				ss := []*server{startServer(t, tr), startServer(t, tr), startServer(t, tr)}
				b := balancer.New("echo", balancer.Options{Picker: balancer.Policies[policy]})
				defer b.Close()
				update(t, b, ss...)
				const workers = 4
				stop := make(chan struct{})
				var atKill [3]int64
				killed := make(chan struct{})
				time.AfterFunc(150*time.Millisecond, func() {
					defer close(killed)
					for i, s := range ss {
						atKill[i] = s.calls.Load()
					}
					ss[1].stop()
				})
				time.AfterFunc(400*time.Millisecond, func() { close(stop) })
				_, failed := load(b, workers, stop)
				<-killed
				if failed > workers {
					t.Errorf("%d calls failed, want at most %d (one in flight per caller)", failed, workers)
				}
				for _, i := range []int{0, 2} {
					if after := ss[i].calls.Load() - atKill[i]; after < 10 {
						t.Errorf("endpoint %d served %d calls after the kill: the load did not go on over the survivors", i, after)
					}
				}
			})
		}
	}
}

// TestRecovered brings a dead endpoint back on its address: the health
// probe finds it SERVING and it takes calls again.
func TestRecovered(t *testing.T) {
	for _, tr := range networkTransports(t) {
		t.Run(tr.Name(), func(t *testing.T) {
			live := startServer(t, tr)
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := lis.Addr().String()
			_ = lis.Close()
			dead := &server{addr: addr, tr: tr}
			b := balancer.New("echo", balancer.Options{ProbeMax: 50 * time.Millisecond})
			defer b.Close()
			update(t, b, live, dead)
			for range 4 {
				_ = call(context.Background(), b, "hi")
			}
			back := startServerAt(t, tr, addr)
			deadline := time.Now().Add(5 * time.Second)
			for back.calls.Load() == 0 && time.Now().Before(deadline) {
				if err := call(context.Background(), b, "hi"); err != nil && !errors.Is(err, context.Canceled) {
					t.Logf("call: %v", err)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if back.calls.Load() == 0 {
				t.Fatalf("the endpoint back on %s got no call within 5s", addr)
			}
		})
	}
}
