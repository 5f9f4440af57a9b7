// Package postgres runs a private PostgreSQL server for svclab: a cluster
// made with initdb in its own temporary directory, served on a unix socket
// only, with fixed settings, and removed without a trace when it stops or
// when the svclab that started it is killed.
//
// initdb and postgres refuse to run as root, so as root the server runs as
// a dedicated system user (User, made with useradd when missing); as any
// other user it runs as that user.
//
// A cluster's directory is $TMPDIR/svclab-pg-PID-*/, which records its
// owner as internal/tempdir does. The postmaster is started by
// internal/deploy/child (a parent-death signal of SIGKILL), and its backends leave when they see the postmaster gone; so
// a kill -9 of svclab stops the server, and Sweep (which every svclab
// command runs when it starts) removes the directories of dead owners and
// any postmaster still serving one. Dynamic shared memory lives in the
// data directory (dynamic_shared_memory_type = mmap), so nothing is left
// in /dev/shm either.
package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svclab/svclab/internal/deploy/child"
	"github.com/svclab/svclab/internal/procgroup"
	"github.com/svclab/svclab/internal/tempdir"
)

// User is the system user the server runs as when svclab runs as root.
const User = "svclab-postgres"

// Role is the database superuser every cluster is made with; clients on
// the unix socket are trusted, and nothing but this machine's root and
// User can reach the socket's directory.
const Role = "svclab"

// DirPrefix begins the name of every cluster directory in $TMPDIR. It is
// not tempdir.Prefix followed by a PID, so that tempdir.Sweep leaves the
// directory to this package's Sweep, which stops a stray postmaster first.
const DirPrefix = "svclab-pg-"

// Port is the number in the socket's name; there is no TCP listener.
const Port = 5432

// Binaries are the PostgreSQL programs a server needs.
type Binaries struct {
	Initdb, Postgres string
}

// SearchGlob is where Debian's postgresql package puts its programs, one
// directory per major version, when they are not on PATH. A variable so
// that tests can make PostgreSQL missing.
var SearchGlob = "/usr/lib/postgresql/*/bin"

// Find locates initdb and postgres: on PATH, else in Debian's
// /usr/lib/postgresql/VERSION/bin (the newest). Its error says how to get
// them.
func Find() (Binaries, error) {
	var b Binaries
	if i, err := exec.LookPath("initdb"); err == nil {
		if p, err := exec.LookPath("postgres"); err == nil {
			return Binaries{Initdb: i, Postgres: p}, nil
		}
	}
	dirs, _ := filepath.Glob(SearchGlob)
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if executable(i) && executable(p) {
			return Binaries{Initdb: i, Postgres: p}, nil
		}
	}
	return b, errors.New("PostgreSQL not found: no initdb and postgres on PATH or in /usr/lib/postgresql/*/bin; install Debian's postgresql package (apt-get install postgresql; .ci/run does)")
}

func versionOf(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

func executable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// account is who the server runs as.
type account struct {
	name     string
	uid, gid int
	asSelf   bool
}

// runAs returns the account the server runs as: the caller, unless the
// caller is root, then User, which it creates (a system user without a
// home or a login shell) when it is missing.
func runAs(create bool) (account, error) {
	if os.Geteuid() != 0 {
		return account{name: strconv.Itoa(os.Geteuid()), uid: os.Geteuid(), gid: os.Getegid(), asSelf: true}, nil
	}
	u, err := user.Lookup(User)
	if err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return account{}, fmt.Errorf("look up user %s: %w", User, err)
		}
		if !create {
			if _, err := exec.LookPath("useradd"); err != nil {
				return account{}, fmt.Errorf("PostgreSQL refuses to run as root, system user %s does not exist and useradd is missing to create it", User)
			}
			return account{name: User}, nil
		}
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
			"--shell", "/usr/sbin/nologin", "--user-group", User).CombinedOutput()
		if err != nil {
			return account{}, fmt.Errorf("create system user %s for PostgreSQL (it refuses to run as root): useradd: %w: %s", User, err, bytes.TrimSpace(out))
		}
		if u, err = user.Lookup(User); err != nil {
			return account{}, fmt.Errorf("look up user %s after creating it: %w", User, err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return account{name: User, uid: uid, gid: gid}, nil
}

// Check reports, without starting anything, whether a server can be
// started here: the programs exist, and the account to run them as exists
// or can be made.
func Check() error {
	if _, err := Find(); err != nil {
		return err
	}
	_, err := runAs(false)
	return err
}

// Options are a server's fixed settings. The zero value is ready to use.
type Options struct {
	// MaxConnections is max_connections; default 100, PostgreSQL's own.
	MaxConnections int
	// SharedBuffers is shared_buffers; default "128MB", PostgreSQL's own.
	SharedBuffers string
	// StartTimeout bounds initdb and the start; default 60 s.
	StartTimeout time.Duration
}

// Server is a running PostgreSQL cluster.
type Server struct {
	dir     string // the cluster's directory: data/, the socket, the log
	logPath string
	pm      *child.Child // the postmaster
}

// Start makes a cluster in a new private directory and starts its server,
// returning once it accepts connections. On error nothing is left: no
// process and no directory.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = 100
	}
	if opts.SharedBuffers == "" {
		opts.SharedBuffers = "128MB"
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	acct, err := runAs(true)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", DirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("postgres: cluster directory: %w", err)
	}
	s := &Server{dir: dir, logPath: filepath.Join(dir, "postgres.log")}
	defer func() {
		if err != nil {
			_ = s.Stop(context.Background())
		}
	}()
	if err := tempdir.Claim(dir); err != nil {
		return nil, err
	}
	if !acct.asSelf {
		if err := os.Chown(dir, acct.uid, acct.gid); err != nil {
			return nil, fmt.Errorf("postgres: hand %s to %s: %w", dir, acct.name, err)
		}
	}

	data := filepath.Join(dir, "data")
	// -N: no fsync of the new files; the cluster lives for one experiment.
	initdb := exec.CommandContext(ctx, bin.Initdb, "-D", data, "-U", Role, "-A", "trust", "-E", "UTF8", "--locale=C", "-N")
	initdb.Dir = dir
	initdb.SysProcAttr = credentials(acct)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("postgres: initdb in %s: %w\n%s", data, err, lastLines(out, 20))
	}

	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("postgres: log: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	args := []string{
		"-D", data,
		"-k", dir, // the socket, and no TCP at all
		"-c", "listen_addresses=",
		"-c", "port=" + strconv.Itoa(Port),
		"-c", "max_connections=" + strconv.Itoa(opts.MaxConnections),
		"-c", "shared_buffers=" + opts.SharedBuffers,
		// Segments in /dev/shm would outlive a kill -9; in the data
		// directory they go with it.
		"-c", "dynamic_shared_memory_type=mmap",
		// The cluster is thrown away after the experiment: durability
		// buys nothing, and waiting for the shared disk would put other
		// tenants' I/O into the measurements.
		"-c", "fsync=off",
		"-c", "full_page_writes=off",
		"-c", "logging_collector=off",
	}
	cmd := exec.Command(bin.Postgres, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = credentials(acct)
	if s.pm, err = child.Start(cmd); err != nil {
		return nil, fmt.Errorf("postgres: start %s: %w", bin.Postgres, err)
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func credentials(a account) *syscall.SysProcAttr {
	if a.asSelf {
		return &syscall.SysProcAttr{}
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid)}}
}

// waitReady connects until the server answers, it exits, or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := s.Connect(ctx, "postgres")
		if err == nil {
			return c.Close(ctx)
		}
		select {
		case <-s.pm.Done():
			return fmt.Errorf("postgres: the server exited while starting (%v); its log:\n%s", s.pm.Err(), s.LogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("postgres: not accepting connections after waiting (%w): %v; its log:\n%s", ctx.Err(), err, s.LogTail(20))
		case <-tick.C:
		}
	}
}

// Dir is the cluster's directory, which holds the socket.
func (s *Server) Dir() string { return s.dir }

// PID is the postmaster's process ID.
func (s *Server) PID() int {
	if s.pm == nil {
		return 0
	}
	return s.pm.Process.Pid
}

// DSN is a libpq connection string for database db.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", s.dir, Port, Role, db)
}

// Connect opens one connection to database db.
func (s *Server) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, s.DSN(db))
}

// CreateTemplate makes database name and runs setup in it, so that Reset
// can copy it. A name that exists already is an error.
func (s *Server) CreateTemplate(ctx context.Context, name, setup string) error {
	if err := s.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	c, err := s.Connect(ctx, name)
	if err != nil {
		return fmt.Errorf("postgres: connect to %s: %w", name, err)
	}
	defer c.Close(ctx)
	// No arguments: the simple protocol runs every statement of setup.
	if _, err := c.Exec(ctx, setup); err != nil {
		return fmt.Errorf("postgres: set up database %s: %w", name, err)
	}
	// Statistics for the planner, as a long-lived database would have.
	if _, err := c.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return fmt.Errorf("postgres: analyze database %s: %w", name, err)
	}
	return nil
}

// Reset makes database db an exact copy of template, dropping what db
// held and ending any session still connected to it.
func (s *Server) Reset(ctx context.Context, db, template string) error {
	return s.admin(ctx,
		"DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)",
		"CREATE DATABASE "+pgx.Identifier{db}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
}

// admin runs statements, one at a time, in the maintenance database.
func (s *Server) admin(ctx context.Context, stmts ...string) error {
	c, err := s.Connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer c.Close(ctx)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("postgres: %s: %w", q, err)
		}
	}
	return nil
}

// LogTail returns the server log's last n lines.
func (s *Server) LogTail(n int) string {
	b, _ := os.ReadFile(s.logPath)
	return lastLines(b, n)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// stopGrace is how long a fast shutdown may take before SIGKILL.
const stopGrace = 10 * time.Second

// Stop shuts the server down (a fast shutdown: sessions are ended), kills
// it if it has not stopped within a grace period or by the time ctx ends,
// and removes its directory. It is safe to call more than once.
func (s *Server) Stop(ctx context.Context) error {
	var errs []error
	if s.pm != nil {
		// SIGINT is a fast shutdown: sessions are ended.
		if err := s.pm.Stop(ctx, syscall.SIGINT, stopGrace); err != nil {
			errs = append(errs, fmt.Errorf("postgres: %w", err))
		}
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, fmt.Errorf("postgres: remove %s: %w", s.dir, err))
		}
	}
	return errors.Join(errs...)
}

// Removed is a directory Sweep removed, with the PID of a server it
// killed there (Killed; 0 for none).
type Removed = tempdir.Removed

// Sweep removes the cluster directories in $TMPDIR whose svclab is dead,
// after killing a postmaster (with its process group) that still serves
// one; its backends exit when it is gone. Clusters of live processes are
// never touched.
func Sweep() ([]Removed, error) {
	return tempdir.SweepPrefix(os.TempDir(), DirPrefix, func(dir string) int {
		data := filepath.Join(dir, "data")
		pm := postmasterPID(data)
		if pm > 0 && procgroup.KillChecked(pm, pm, func(pid int) bool { return isPostmaster(pid, data) }) {
			return pm
		}
		return 0
	})
}

// postmasterPID is the PID data's postmaster.pid names, or 0.
func postmasterPID(data string) int {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// isPostmaster reports whether process pid is a postgres whose command
// line names data, so that a recycled PID is never taken for it.
func isPostmaster(pid int, data string) bool {
	cl, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	args := strings.Split(string(cl), "\x00")
	return len(args) > 0 && filepath.Base(args[0]) == "postgres" && slices.Contains(args, data)
}
