package sidecar

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/credentials/insecure"
)

// TestLiveUpdate runs each proxy kind, for real, with one outbound
// listener over three upstreams: calls spread evenly (±10%); then, while
// calls run, one upstream is replaced by a new one through Update. No call
// fails, the new upstream gets calls, the old one none after the update,
// and the proxy process is the one that started.
func TestLiveUpdate(t *testing.T) {
	for _, name := range []string{"nginx", "haproxy", "envoy"} {
		t.Run(name, func(t *testing.T) {
			k, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			bin := binaryOrSkip(t, k)
			var counts [4]atomic.Int64
			var addrs []string
			for i := range counts {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					counts[i].Add(1)
					fmt.Fprint(w, i)
				}))
				t.Cleanup(srv.Close)
				addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
			}
			port, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			c := Config{Name: "t." + name, Protocol: HTTP1, Dir: t.TempDir(), Threads: 1, Listeners: []Listener{
				{Name: "out_0_x", Port: port, Upstreams: addrs[:3], Component: "x"},
			}}
			startProxyGroup(t, k, bin, c)
			url := fmt.Sprintf("http://127.0.0.1:%d/", port)
			client := &http.Client{Timeout: 5 * time.Second}
			call := func() error {
				resp, err := client.Get(url)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				_, _ = io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("status %s", resp.Status)
				}
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for call() != nil {
				if ctx.Err() != nil {
					t.Fatal("the proxy did not serve within 10 s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			for i := range counts {
				counts[i].Store(0)
			}
			const n = 90
			for range n {
				if err := call(); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 3 {
				if got := counts[i].Load(); got < n/3*9/10 || got > n/3*11/10 {
					t.Errorf("upstream %d got %d of %d calls, want %d ± 10%%", i, got, n, n/3)
				}
			}
			// Upstream 1 leaves and 3 joins while 4 callers run. The callers
			// stop on a signal, bounded by time rather than by a count a
			// slow reload could outlast (a loaded machine once saw them all
			// finish before nginx's old worker had left).
			var failed, total atomic.Int64
			var firstErr atomic.Value
			stop := make(chan struct{})
			var wg sync.WaitGroup
			callersEnd := time.Now().Add(30 * time.Second)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(callersEnd) {
						select {
						case <-stop:
							return
						default:
						}
						if err := call(); err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err)
						}
						total.Add(1)
					}
				}()
			}
			time.Sleep(200 * time.Millisecond)
			c.Listeners[0].Upstreams = []string{addrs[0], addrs[2], addrs[3]}
			if err := k.(Live).Update(c, c.Listeners); err != nil {
				t.Fatal(err)
			}
			// The update is live once the upstream that joined gets a call
			// (Envoy applies the file it sees a moment later); calls then in
			// flight to the one that left may still end there.
			applied := time.Now().Add(10 * time.Second)
			for counts[3].Load() == 0 && time.Now().Before(applied) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			left, before := counts[1].Load(), total.Load()
			time.Sleep(300 * time.Millisecond)
			close(stop)
			wg.Wait()
			if f := failed.Load(); f > 0 {
				t.Errorf("%d calls failed across the update, first: %v", f, firstErr.Load())
			}
			if counts[3].Load() == 0 {
				t.Fatalf("the upstream that joined got no call within 10 s of the update (%d calls in all)", total.Load())
			}
			if total.Load() == before {
				t.Fatal("no call ran in the 300 ms after the update was live")
			}
			if got := counts[1].Load() - left; got > 0 {
				t.Errorf("the upstream that left got %d of %d calls after the update was live", got, total.Load()-before)
			}
		})
	}
}

// startProxyGroup starts the proxy in a process group of its own and
// kills the whole group at cleanup: nginx's workers outlive a killed
// master.
func startProxyGroup(t *testing.T, k Kind, bin string, c Config) {
	t.Helper()
	path, err := Write(k, c)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, k.Args(path, c)...)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", c.Name, out.String())
		}
	})
}

// TestPortNotShared: a proxy whose port another proxy of its kind holds
// fails to start. Envoy and HAProxy set SO_REUSEPORT by default, so two
// of them bound one port and the kernel split connections between them:
// two deployments in the test suite once drew the same port, and each got
// the other's calls ("connection reset" on an mTLS handshake).
func TestPortNotShared(t *testing.T) {
	for _, name := range []string{"nginx", "haproxy", "envoy"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			bin := binaryOrSkip(t, k)
			port, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			up := startHealthServer(t)
			config := func(n string) Config {
				return Config{Name: n + "." + name, Protocol: TCP, Dir: t.TempDir(), Threads: 1, Listeners: []Listener{
					{Name: "out_0_x", Port: port, Upstreams: []string{up}, Component: "x"},
				}}
			}
			startProxyGroup(t, k, bin, config("first"))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for check(ctx, fmt.Sprintf("127.0.0.1:%d", port), insecure.NewCredentials()) != nil {
				if ctx.Err() != nil {
					t.Fatal("the first proxy did not serve within 20 s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			second := config("second")
			path, err := Write(k, second)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, bin, k.Args(path, second)...)
			cmd.Dir = second.Dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			err = cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("a second %s on the port the first holds ran until the deadline: it shares the port\n%s", name, out.String())
			}
			if err == nil {
				t.Errorf("a second %s on the port the first holds exited 0", name)
			}
			if !strings.Contains(strings.ToLower(out.String()), "address already in use") {
				t.Errorf("a second %s on a held port said:\n%s\nwant \"address already in use\"", name, out.String())
			}
		})
	}
}
