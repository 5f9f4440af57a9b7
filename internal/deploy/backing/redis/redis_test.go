package redis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// childEnv makes the test binary start a server, print its directory and
// PID, and wait to be killed.
const childEnv = "SVCLAB_TEST_REDIS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		s, err := Start(context.Background(), Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s %d\n", s.Dir(), s.PID())
		time.Sleep(time.Minute)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func need(t *testing.T) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skipf("Redis cannot run here (install Debian's redis-server; .ci/run does): %v", err)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0] != "Z" && f[0] != "X"
}

func TestServerFlushAndStop(t *testing.T) {
	need(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())

	opts, err := goredis.ParseURL(s.Addr())
	if err != nil {
		t.Fatalf("ParseURL(%q): %v", s.Addr(), err)
	}
	c := goredis.NewClient(opts)
	defer c.Close()
	if err := c.HIncrBy(ctx, "cart:ann", "OLJCESPC7Z", 3).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.HGet(ctx, "cart:ann", "OLJCESPC7Z").Int(); err != nil || got != 3 {
		t.Fatalf("HGET after HINCRBY 3 = %d, %v; want 3", got, err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "cart:ann").Result(); err != nil || n != 0 {
		t.Fatalf("after Flush the key exists (%d, %v)", n, err)
	}
	// No TCP listener: the server was told port 0.
	if port, err := c.ConfigGet(ctx, "port").Result(); err != nil || port["port"] != "0" {
		t.Errorf("CONFIG GET port = %v, %v; want 0 (no TCP)", port, err)
	}

	pid, dir := s.PID(), s.Dir()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("server %d alive after Stop", pid)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Stop (%v)", dir, err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartFailureLeavesNothing(t *testing.T) {
	need(t)
	pattern := filepath.Join(os.TempDir(), DirPrefix+strconv.Itoa(os.Getpid())+"-*")
	before, _ := filepath.Glob(pattern)
	// A maxmemory redis-server cannot parse: it exits at once.
	_, err := Start(context.Background(), Options{MaxMemory: "lots"})
	if err == nil {
		t.Fatal("Start with maxmemory=lots succeeded")
	}
	if !strings.Contains(err.Error(), "exited while starting") {
		t.Errorf("error %q does not say the server exited", err)
	}
	after, _ := filepath.Glob(pattern)
	if len(after) != len(before) {
		t.Errorf("server directories before %v, after a failed start %v", before, after)
	}
}

func TestMissingBinary(t *testing.T) {
	old := Binary
	Binary = "svclab-no-such-redis-server"
	defer func() { Binary = old }()
	err := Check()
	if err == nil || !strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Fatalf("Check with no binary = %v, want an error saying how to install it", err)
	}
}

func TestKill9LeavesNothing(t *testing.T) {
	need(t)
	// The dead owner's directory goes in a temp dir of this test's own:
	// every svclab command sweeps the machine's, and one that starts
	// between the kill and the checks below (make test runs the CLI's
	// tests beside these) would remove it first.
	private, err := os.MkdirTemp("", "kill9-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(private) })
	if err := os.Chmod(private, 0o755); err != nil { // the server may run as another user
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", private)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child: %v", err)
	}
	var dir string
	var pid int
	if _, err := fmt.Sscanf(line, "%s %d", &dir, &pid); err != nil {
		t.Fatalf("child said %q: %v", line, err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("redis-server %d outlived its svclab's kill -9 by 10 s", pid)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the dead owner's directory %s should be there for Sweep: %v", dir, err)
	}
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range removed {
		found = found || r.Path == dir
	}
	if !found {
		t.Errorf("Sweep removed %v, not %s", removed, dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Sweep (%v)", dir, err)
	}
}

func TestSweepSparesLiveOwner(t *testing.T) {
	need(t)
	s, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	if _, err := Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Dir()); err != nil {
		t.Fatalf("Sweep removed a live process's directory: %v", err)
	}
	if !alive(s.PID()) {
		t.Fatal("Sweep killed a live process's server")
	}
}
