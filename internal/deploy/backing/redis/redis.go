// Package redis runs a private Redis server for svclab (Debian's
// redis-server): in its own temporary directory, on a unix socket only
// (no TCP port), with persistence off, and removed without a trace when it
// stops or when the svclab that started it is killed.
//
// A server's directory is $TMPDIR/svclab-redis-PID-*/, which records its
// owner as internal/tempdir does. The server is started by
// internal/deploy/child (a parent-death signal of SIGKILL), so a kill -9
// of svclab stops it, and Sweep (which every svclab command runs when it
// starts) removes the directories of dead owners and kills any server
// still running in one.
package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/svclab/svclab/internal/deploy/child"
	"github.com/svclab/svclab/internal/procgroup"
	"github.com/svclab/svclab/internal/tempdir"
)

// DirPrefix begins the name of every server directory in $TMPDIR. It is
// not tempdir.Prefix followed by a PID, so that tempdir.Sweep leaves the
// directory to this package's Sweep, which stops a stray server first.
const DirPrefix = "svclab-redis-"

// Binary is the server program, looked up on PATH and in /usr/bin; a
// variable so that tests can make it missing.
var Binary = "redis-server"

// Find locates redis-server; its error says how to get it.
func Find() (string, error) {
	if p, err := exec.LookPath(Binary); err == nil {
		return p, nil
	}
	if p := filepath.Join("/usr/bin", filepath.Base(Binary)); executable(p) {
		return p, nil
	}
	return "", fmt.Errorf("Redis not found: no %s on PATH or in /usr/bin; install Debian's redis-server package (apt-get install redis-server; .ci/run does)", Binary)
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Check reports, without starting anything, whether a server can be
// started here.
func Check() error {
	_, err := Find()
	return err
}

// Options are a server's fixed settings. The zero value is ready to use.
type Options struct {
	// MaxMemory is maxmemory, e.g. "256mb"; default "256mb". Carts are
	// small: the limit only keeps a runaway run from eating the machine.
	MaxMemory string
	// StartTimeout bounds the start; default 30 s.
	StartTimeout time.Duration
}

// Server is a running Redis server.
type Server struct {
	dir     string // socket, log, and the server's working directory
	logPath string
	proc    *child.Child
	client  *goredis.Client // administration: readiness, Flush
}

// Start starts a server in a new private directory, returning once it
// answers PING. On error nothing is left: no process and no directory.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	if opts.MaxMemory == "" {
		opts.MaxMemory = "256mb"
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", DirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("redis: server directory: %w", err)
	}
	s := &Server{dir: dir, logPath: filepath.Join(dir, "redis.log")}
	defer func() {
		if err != nil {
			_ = s.Stop(context.Background())
		}
	}()
	if err := tempdir.Claim(dir); err != nil {
		return nil, err
	}
	// Every setting on the command line: no config file is read, so the
	// machine's /etc/redis cannot change a run.
	args := []string{
		"--port", "0", // no TCP at all
		"--unixsocket", s.Socket(),
		"--unixsocketperm", "700",
		"--dir", dir,
		"--logfile", s.logPath,
		"--daemonize", "no",
		// The data lives for one experiment and is flushed before each
		// run: persistence would only add disk writes to the measurements.
		"--save", "",
		"--appendonly", "no",
		"--maxmemory", opts.MaxMemory,
		"--maxmemory-policy", "noeviction",
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir // how Sweep recognises a stray server: its working directory
	if s.proc, err = child.Start(cmd); err != nil {
		return nil, fmt.Errorf("redis: start %s: %w", bin, err)
	}
	s.client = goredis.NewClient(&goredis.Options{Network: "unix", Addr: s.Socket(), MaxRetries: -1, PoolSize: 2})
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// waitReady pings until the server answers, it exits, or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := s.client.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-s.proc.Done():
			return fmt.Errorf("redis: the server exited while starting (%v); its log:\n%s", s.proc.Err(), s.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("redis: not answering after waiting (%w): %v; its log:\n%s", ctx.Err(), err, s.LogTail(20))
		case <-tick.C:
		}
	}
}

// Dir is the server's directory, which holds the socket.
func (s *Server) Dir() string { return s.dir }

// Socket is the path of the server's unix socket.
func (s *Server) Socket() string { return filepath.Join(s.dir, "redis.sock") }

// Addr is the address components are given: a redis:// URL of the
// socket, which go-redis's ParseURL reads (unix:///path).
func (s *Server) Addr() string { return "unix://" + s.Socket() }

// PID is the server's process ID.
func (s *Server) PID() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.Process.Pid
}

// Flush empties every database, so that a run starts with no carts.
func (s *Server) Flush(ctx context.Context) error {
	if err := s.client.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("redis: FLUSHALL: %w", err)
	}
	return nil
}

// LogTail returns the server log's last n lines.
func (s *Server) LogTail(n int) string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// stopGrace is how long a shutdown may take before SIGKILL.
const stopGrace = 5 * time.Second

// Stop shuts the server down (SIGTERM; with persistence off it saves
// nothing), kills it if it has not stopped within a grace period or by the
// time ctx ends, and removes its directory. It is safe to call more than
// once.
func (s *Server) Stop(ctx context.Context) error {
	var errs []error
	if s.client != nil {
		_ = s.client.Close()
	}
	if s.proc != nil {
		if err := s.proc.Stop(ctx, syscall.SIGTERM, stopGrace); err != nil {
			errs = append(errs, fmt.Errorf("redis: %w", err))
		}
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, fmt.Errorf("redis: remove %s: %w", s.dir, err))
		}
	}
	return errors.Join(errs...)
}

// Removed is a directory Sweep removed, with the PID of a server it
// killed there (Killed; 0 for none).
type Removed = tempdir.Removed

// Sweep removes the server directories in $TMPDIR whose svclab is dead,
// after killing a server that still runs in one. Directories of live
// processes are never touched.
func Sweep() ([]Removed, error) {
	return tempdir.SweepPrefix(os.TempDir(), DirPrefix, func(dir string) int {
		killed := 0
		for _, srv := range serversIn(dir) {
			// Checked again through a pidfd as it is killed.
			if procgroup.KillChecked(srv, 0, func(pid int) bool { return serverIn(pid, dir) }) {
				killed = srv
			}
		}
		return killed
	})
}

// serversIn returns the PIDs of redis-server processes whose working
// directory is dir.
func serversIn(dir string) []int {
	procs, _ := os.ReadDir("/proc")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err == nil && serverIn(pid, dir) {
			out = append(out, pid)
		}
	}
	return out
}

// serverIn reports whether process pid is a redis-server whose working
// directory is dir. Redis rewrites its command line, so the working
// directory (set at Start) is what identifies a server of ours; a
// recycled PID running something else is never killed.
func serverIn(pid int, dir string) bool {
	p := filepath.Join("/proc", strconv.Itoa(pid))
	cwd, err := os.Readlink(filepath.Join(p, "cwd"))
	if err != nil || cwd != dir {
		return false
	}
	exe, err := os.Readlink(filepath.Join(p, "exe"))
	return err == nil && strings.HasPrefix(filepath.Base(exe), "redis-")
}
