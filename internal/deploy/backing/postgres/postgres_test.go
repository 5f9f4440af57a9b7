package postgres

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

	"github.com/svclab/svclab/internal/tempdir"
)

// childEnv makes the test binary start a server, print its directory and
// PID, and wait to be killed.
const childEnv = "SVCLAB_TEST_PG_CHILD"

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
		t.Skipf("PostgreSQL cannot run here (install Debian's postgresql; .ci/run does): %v", err)
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

func TestServerResetAndStop(t *testing.T) {
	need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	if fi, err := os.Stat(s.Dir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cluster directory %s: %v, mode %v; want private (0700)", s.Dir(), err, fi.Mode())
	}
	if err := s.CreateTemplate(ctx, "tmpl", `CREATE TABLE t (v int); INSERT INTO t SELECT generate_series(1, 5);`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		c, err := s.Connect(ctx, "work")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for run := range 2 {
		if err := s.Reset(ctx, "work", "tmpl"); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 5 {
			t.Fatalf("run %d: %d rows after reset, want the template's 5", run, n)
		}
		// A session left open by the previous run must not block the
		// next reset.
		c, err := s.Connect(ctx, "work")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "INSERT INTO t SELECT generate_series(1, 100)"); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 105 {
			t.Fatalf("run %d: %d rows after inserting 100, want 105", run, n)
		}
	}

	pid, dir := s.PID(), s.Dir()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("postmaster %d still runs after Stop", pid)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Stop (%v)", dir, err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartFailureLeavesNothing(t *testing.T) {
	need(t)
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), DirPrefix+strconv.Itoa(os.Getpid())+"-*"))
	// shared_buffers beyond the setting's range (at most 2^30-1 blocks of
	// 8 kB): the postmaster exits whatever the machine's memory. (1TB was
	// refused only by the kernel's overcommit check, and once, under
	// load, started.)
	_, err := Start(context.Background(), Options{SharedBuffers: "16TB"})
	if err == nil {
		t.Fatal("Start with shared_buffers=16TB succeeded")
	}
	if !strings.Contains(err.Error(), "exited while starting") {
		t.Errorf("error %q does not say the server exited", err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), DirPrefix+strconv.Itoa(os.Getpid())+"-*"))
	if len(after) != len(before) {
		t.Errorf("cluster directories before %v, after a failed start %v", before, after)
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
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		t.Fatalf("postmaster %d outlived its svclab's kill -9 by 10 s", pid)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the dead owner's cluster %s should be there for Sweep: %v", dir, err)
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
		t.Fatalf("Sweep removed a live process's cluster: %v", err)
	}
	if !alive(s.PID()) {
		t.Fatal("Sweep killed a live process's postmaster")
	}
}

// TestSweepChecksThePostmaster: Sweep kills what a dead run's
// postmaster.pid names only while that PID is a postgres of that data
// directory, and then its process group too; a PID given since to another
// process is spared. A shell stands for the postmaster (named postgres,
// its command line naming the directory) and its background sleep for
// what shares its group.
func TestSweepChecksThePostmaster(t *testing.T) {
	bin := t.TempDir()
	if err := os.Symlink("/bin/sh", filepath.Join(bin, "postgres")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		argv0  string
		killed bool
	}{
		{"the dead run's postmaster", filepath.Join(bin, "postgres"), true},
		{"a recycled PID", "/bin/sh", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			dir := filepath.Join(tmp, fmt.Sprintf("%s%d-test", DirPrefix, os.Getpid()))
			data := filepath.Join(dir, "data")
			if err := os.MkdirAll(data, 0o700); err != nil {
				t.Fatal(err)
			}
			// This process with another start time: an owner that is gone.
			if err := os.WriteFile(filepath.Join(dir, tempdir.OwnerFile), fmt.Appendf(nil, "%d 1\n", os.Getpid()), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(c.argv0, "-c", `sleep 60 >/dev/null & echo $!; wait`, data)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var bg int
			_, scanErr := fmt.Fscan(out, &bg)
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			defer func() {
				if bg > 0 && alive(bg) {
					_ = syscall.Kill(bg, syscall.SIGKILL) // running: its PID is its own
				}
				_ = cmd.Process.Kill()
				<-waited
			}()
			if scanErr != nil {
				t.Fatalf("the shell printed no PID: %v", scanErr)
			}
			pm := cmd.Process.Pid
			if err := os.WriteFile(filepath.Join(data, "postmaster.pid"), fmt.Appendf(nil, "%d\n%s\n", pm, data), 0o600); err != nil {
				t.Fatal(err)
			}
			removed, err := Sweep()
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if c.killed {
				want = pm
			}
			if len(removed) != 1 || removed[0].Path != dir || removed[0].Killed != want {
				t.Errorf("Sweep: %+v, want %s removed with Killed %d", removed, dir, want)
			}
			select {
			case err := <-waited:
				waited <- err
				if !c.killed {
					t.Errorf("the process of the recycled PID ended: %v", err)
				} else if err == nil || err.Error() != "signal: killed" {
					t.Errorf("the postmaster ended with %v, want signal: killed", err)
				}
			case <-time.After(2 * time.Second):
				if c.killed {
					t.Error("the postmaster outlived Sweep")
				}
			}
			for deadline := time.Now().Add(5 * time.Second); c.killed && alive(bg) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if alive(bg) == c.killed {
				t.Errorf("the process in the postmaster's group: running %v, want %v", alive(bg), !c.killed)
			}
		})
	}
}
