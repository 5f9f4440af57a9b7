package conformance

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc"

	selectapp "github.com/svclab/svclab/apps/select"
	selectorpb "github.com/svclab/svclab/proto/selector"
)

// bareWarmupCalls warms each server of a pair before it is timed: the
// JVM's median settles after some thousands of calls (docs/LANGUAGES.md).
const bareWarmupCalls = 5000

// BenchmarkBareFramework times the select app's selector served by each
// language's svclab host against the same service on the bare framework
// the host wraps (issue 13: at most 1.10x at p50): a bare grpc-java server
// and a hand-written Spring controller (impl/java/src/test/.../bench), a
// bare grpcio server (impl/python/bench). One Go client, svclab's
// transport, the same StdSize request (200 ints); each iteration calls
// both servers, in an order that alternates, so that a busy machine slows
// both alike. p50-ratio is the host's p50 over the bare server's, each
// from an HdrHistogram of its timed calls.
//
//	go test -run '^$' -bench BareFramework -benchtime 20000x ./internal/conformance
//
// scripts/bench/languages.sh measures the same pairs from svclab load in
// rounds, with each server's CPU per call.
func BenchmarkBareFramework(b *testing.B) {
	values := make([]int32, 200)
	for i := range values {
		values[i] = int32(i*7919 - 100_000)
	}
	req := &selectorpb.SelectRequest{Values: values}
	for _, pair := range []struct {
		name, lang, transport string
		bare                  func(tb testing.TB, root, addr string) []string
	}{
		{"java-grpc", "java", "grpc", bareJava("BareGrpcSelector")},
		{"java-http", "java", "http", bareJava("BareRestSelector")},
		{"python-grpc", "python", "grpc", barePython},
	} {
		b.Run(pair.name, func(b *testing.B) {
			im := implFor(b, pair.lang)
			// The JVM with its full JIT, as BenchmarkRoundTrip runs it and
			// as the bare server runs.
			argv := slices.DeleteFunc(im.argv(b), func(a string) bool {
				return a == "-XX:TieredStopAtLevel=1" || a == "-XX:+UseSerialGC" || a == "-Xmx256m"
			})
			host := startHost(b, im, argv, hostConfig(selectapp.Name, selectapp.Selector, pair.transport, nil))
			addr := freeAddr(b)
			startBare(b, pair.bare(b, repoRoot(b), addr))
			hc := dial(b, pair.transport, host.addrs[selectapp.Selector])
			bc := dial(b, pair.transport, addr)
			waitServing(b, bc, req)
			// The servers once for all of the rounds: a benchmark function
			// without sub-benchmarks runs again for every b.N tried.
			b.Run("selector", func(b *testing.B) { benchPair(b, hc, bc, req) })
		})
	}
}

// benchPair times b.N calls to each of hc (the host) and bc (the bare
// server), alternating which goes first.
func benchPair(b *testing.B, hc, bc grpc.ClientConnInterface, req *selectorpb.SelectRequest) {
	resp := new(selectorpb.SelectResponse)
	call := func(c grpc.ClientConnInterface) time.Duration {
		start := time.Now()
		if err := c.Invoke(context.Background(), selectorpb.Selector_Select_FullMethodName, req, resp); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	if b.N > 1 {
		for range bareWarmupCalls {
			call(hc)
			call(bc)
		}
	}
	hostH := hdr.New(1, int64(10*time.Second/time.Microsecond), 3)
	bareH := hdr.New(1, int64(10*time.Second/time.Microsecond), 3)
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			_ = hostH.RecordValue(max(call(hc).Microseconds(), 1))
			_ = bareH.RecordValue(max(call(bc).Microseconds(), 1))
		} else {
			_ = bareH.RecordValue(max(call(bc).Microseconds(), 1))
			_ = hostH.RecordValue(max(call(hc).Microseconds(), 1))
		}
	}
	b.StopTimer()
	hp, bp := float64(hostH.ValueAtQuantile(50)), float64(bareH.ValueAtQuantile(50))
	b.ReportMetric(hp, "host-p50-µs")
	b.ReportMetric(bp, "bare-p50-µs")
	b.ReportMetric(hp/bp, "p50-ratio")
	b.ReportMetric(float64(hostH.ValueAtQuantile(99)), "host-p99-µs")
	b.ReportMetric(float64(bareH.ValueAtQuantile(99)), "bare-p99-µs")
}

func implFor(tb testing.TB, lang string) impl {
	for _, im := range impls {
		if im.lang == lang {
			return im
		}
	}
	tb.Fatalf("no implementation in %s", lang)
	return impl{}
}

// bareJava runs a bare Java server of impl/java's test sources.
func bareJava(class string) func(tb testing.TB, root, addr string) []string {
	return func(tb testing.TB, root, addr string) []string {
		t := filepath.Join(root, "impl", "java", "target")
		if _, err := os.Stat(filepath.Join(t, "test-classes", "com", "github", "svclab", "bench", class+".class")); err != nil {
			tb.Skipf("java: %s is not built (make java compiles impl/java's test sources): %v", class, err)
		}
		cp := filepath.Join(t, "test-classes") + ":" + filepath.Join(t, "classes") + ":" + filepath.Join(t, "lib", "*")
		return []string{"java", "-cp", cp, "com.github.svclab.bench." + class, addr}
	}
}

func barePython(tb testing.TB, root, addr string) []string {
	return []string{filepath.Join(root, "impl", "python", ".venv", "bin", "python"),
		filepath.Join(root, "impl", "python", "bench", "bare_grpc_selector.py"), addr}
}

func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startBare starts a bare server in its own process group, killed with
// the group when the benchmark ends (a bare server has no host protocol to
// honour).
func startBare(tb testing.TB, argv []string) {
	tb.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := os.CreateTemp(tb.TempDir(), "bare-*.log")
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %v: %v", argv, err)
	}
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		out.Close()
	})
}

// waitServing calls c until it answers, up to readyTimeout.
func waitServing(tb testing.TB, c grpc.ClientConnInterface, req *selectorpb.SelectRequest) {
	tb.Helper()
	deadline := time.Now().Add(readyTimeout)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = c.Invoke(ctx, selectorpb.Selector_Select_FullMethodName, req, new(selectorpb.SelectResponse))
		cancel()
		if err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	tb.Fatal(fmt.Errorf("bare server not serving after %s: %w", readyTimeout, err))
}
