// Command postgres is the entrypoint of the real node's stand-in for the
// official postgres image, which no registry here serves: an image of
// Debian's PostgreSQL, built by the test harness
// (internal/deploy/kube/kubetest). It keeps the part of the official
// image's interface that svclab's kube deployer uses, so a backing
// Deployment runs it unchanged:
//
//   - POSTGRES_USER (default postgres) is the superuser initdb makes,
//     POSTGRES_DB (default the user) a database made beside it, and
//     POSTGRES_HOST_AUTH_METHOD how clients over TCP are let in: trust
//     only (the official image's other methods need a password this
//     stand-in has no use for);
//   - when PGDATA (default /var/lib/postgresql/data) holds no database,
//     it makes one, and runs each *.sql of /docker-entrypoint-initdb.d in
//     name order with psql, stopping at the first error, on a server that
//     listens on its Unix socket only;
//   - then it becomes postgres (exec), listening on every address, with
//     its arguments as the server's options ("-c max_connections=250");
//     a first argument "postgres" is dropped, as the official image does.
//
// It runs as the image's user, never root: initdb and postgres refuse
// root, and the stand-in needs no privilege to drop.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// initDir holds the SQL run when the database is made.
const initDir = "/docker-entrypoint-initdb.d"

// socketDir is where the server's Unix socket is, during the
// initialization and after (Debian's default).
const socketDir = "/var/run/postgresql"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "postgres entrypoint:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	user := env("POSTGRES_USER", "postgres")
	db := env("POSTGRES_DB", user)
	data := env("PGDATA", "/var/lib/postgresql/data")
	if auth := os.Getenv("POSTGRES_HOST_AUTH_METHOD"); auth != "trust" {
		return fmt.Errorf("POSTGRES_HOST_AUTH_METHOD=%q: this stand-in supports only \"trust\"", auth)
	}
	if len(args) > 0 && args[0] == "postgres" {
		args = args[1:]
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("arguments %q: this image runs postgres only, its arguments the server's options", args)
	}
	server, err := exec.LookPath("postgres")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initialize(server, data, user, db); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	argv := append([]string{"postgres", "-D", data, "-c", "listen_addresses=*"}, args...)
	return syscall.Exec(server, argv, os.Environ())
}

// initialize makes the database cluster in data, the database db, and
// runs the initialization SQL, as the official image does on its first
// start.
func initialize(server, data, user, db string) error {
	if err := command("initdb", "-D", data, "-U", user, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(hba, "host all all all trust")
	if cerr := hba.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pg_hba.conf: %w", err)
	}
	cmd := exec.Command(server, "-D", data, "-c", "listen_addresses=", "-c", "unix_socket_directories="+socketDir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres for the initialization: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := waitReady(user, exited); err != nil {
		cmd.Process.Kill()
		return err
	}
	err = setup(user, db)
	// SIGINT is the fast shutdown: the sessions end, the data is kept.
	cmd.Process.Signal(syscall.SIGINT)
	if werr := <-exited; err == nil && werr != nil {
		err = fmt.Errorf("postgres after the initialization: %w", werr)
	}
	if err == nil {
		fmt.Println("PostgreSQL init process complete; ready for start up.")
	}
	return err
}

// waitReady waits for the initialization's server to take connections.
func waitReady(user string, exited <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if exec.Command("pg_isready", "-q", "-h", socketDir, "-U", user, "-d", "postgres").Run() == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("postgres exited during the initialization: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("postgres took no connection within 2 minutes of its start")
		}
	}
}

// setup makes the database db and runs initDir's SQL in it.
func setup(user, db string) error {
	psql := []string{"-v", "ON_ERROR_STOP=1", "--no-psqlrc", "--no-password", "-h", socketDir, "-U", user}
	if db != "postgres" {
		q := `CREATE DATABASE "` + strings.ReplaceAll(db, `"`, `""`) + `"`
		if err := command("psql", append(psql, "-d", "postgres", "-c", q)...); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(initDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	for _, name := range names {
		path := filepath.Join(initDir, name)
		switch {
		case strings.HasPrefix(name, "."):
			// A ConfigMap volume's own entries (..data and its target).
		case strings.HasSuffix(name, ".sql"):
			fmt.Println("running", path)
			if err := command("psql", append(psql, "-d", db, "-f", path)...); err != nil {
				return err
			}
		default:
			fmt.Println("ignoring", path, "(only *.sql files run in this image)")
		}
	}
	return nil
}

// command runs a PostgreSQL program, its output the container's.
func command(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
