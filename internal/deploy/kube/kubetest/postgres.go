package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/svclab/svclab/internal/deploy/backing/postgres"
	"github.com/svclab/svclab/internal/image"
)

// The official postgres image, which the kube deployer's backing
// Deployment runs, cannot be pulled here: no registry is reachable. The
// real node runs a stand-in instead, built at its start from this
// machine's Debian PostgreSQL (the local deployer's), and a spec names it
// in deploy.kube.backing_images.postgres. The stand-in keeps the part of
// the official image's interface the deployer uses (POSTGRES_USER,
// POSTGRES_DB, POSTGRES_HOST_AUTH_METHOD=trust, the SQL of
// /docker-entrypoint-initdb.d, the server's options as arguments,
// pg_isready on PATH): tools/kube/postgres is its entrypoint. Its
// PostgreSQL is the machine's release (15 on Debian 12), not the official
// image's 16.

// postgresImagePrefix begins the stand-in's tag; the PostgreSQL major
// version follows (svclab.local/postgres:15).
const postgresImagePrefix = "svclab.local/postgres:"

// postgresUID is the stand-in's user and group, the official image's
// postgres account: initdb and postgres refuse to run as root.
const postgresUID = 999

// pgData is the database's directory in the stand-in, the official
// image's PGDATA.
const pgData = "/var/lib/postgresql/data"

// entrypointPath is where the stand-in's entrypoint is.
const entrypointPath = "/usr/local/bin/postgres-entrypoint"

// postgresPrograms are the programs the stand-in runs: the server,
// initdb (which runs the server too), psql for the initialization SQL
// and pg_isready for the readiness probe.
var postgresPrograms = []string{"postgres", "initdb", "psql", "pg_isready"}

// pgInstall is where a PostgreSQL installation of this machine keeps
// what the stand-in needs: pg_config's answers.
type pgInstall struct {
	bin, share, lib, major string
}

// findPostgres finds the machine's PostgreSQL as the local deployer does
// (postgres.Find), and asks its pg_config where the rest is.
func findPostgres(ctx context.Context) (pgInstall, error) {
	b, err := postgres.Find()
	if err != nil {
		return pgInstall{}, err
	}
	// The programs beside the server, which may be linked from PATH.
	server, err := filepath.EvalSymlinks(b.Postgres)
	if err != nil {
		return pgInstall{}, fmt.Errorf("kubetest: %w", err)
	}
	in := pgInstall{bin: filepath.Dir(server)}
	cfg := filepath.Join(in.bin, "pg_config")
	out, err := exec.CommandContext(ctx, cfg, "--sharedir", "--pkglibdir", "--version").Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 3 {
		return in, fmt.Errorf("kubetest: %s --sharedir --pkglibdir --version: %v: %q", cfg, err, out)
	}
	in.share, in.lib = lines[0], lines[1]
	// "PostgreSQL 15.18 (Debian 15.18-0+deb12u1)"
	f := strings.Fields(lines[2])
	if len(f) < 2 {
		return in, fmt.Errorf("kubetest: %s --version: %q", cfg, lines[2])
	}
	in.major, _, _ = strings.Cut(f[1], ".")
	return in, nil
}

// tag is the stand-in's tag for this installation.
func (in pgInstall) tag() string { return postgresImagePrefix + in.major }

// postgresImage builds the stand-in from the machine's PostgreSQL and
// its entrypoint, the static binary entry. Its one
// layer holds the four programs and the shell initdb needs, the server's
// modules (but the JIT's, which would bring LLVM), every library they
// load (ldd), the share directory, UTC's zone, and the account initdb
// looks itself up in.
func postgresImage(ctx context.Context, in pgInstall, entry string, plat v1.Platform) (v1.Image, error) {
	var files []image.File
	add := func(f image.File) { files = append(files, f) }
	var elves []string
	for _, p := range postgresPrograms {
		elves = append(elves, filepath.Join(in.bin, p))
	}
	// initdb starts the server through popen(3), which runs /bin/sh.
	elves = append(elves, "/bin/sh")
	mods, _ := filepath.Glob(filepath.Join(in.lib, "*.so"))
	for _, m := range mods {
		if !strings.HasPrefix(filepath.Base(m), "llvmjit") {
			elves = append(elves, m)
		}
	}
	libs, err := sharedLibraries(ctx, elves)
	if err != nil {
		return nil, err
	}
	for _, p := range append(elves, libs...) {
		add(image.File{Path: p, Src: p, Mode: 0o755})
	}
	err = filepath.WalkDir(in.share, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			add(image.File{Path: p, Mode: 0o755})
		default:
			add(image.File{Path: p, Src: p, Mode: 0o644})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	add(image.File{Path: "/usr/share/zoneinfo/Etc/UTC", Src: "/usr/share/zoneinfo/Etc/UTC", Mode: 0o644})
	add(image.File{Path: "/usr/share/zoneinfo/UTC", Link: "Etc/UTC"})
	add(image.File{Path: entrypointPath, Src: entry, Mode: 0o755})
	add(image.File{Path: "/tmp", Mode: 0o1777})
	account := fmt.Sprintf("postgres:x:%d:%d:PostgreSQL:/var/lib/postgresql:/nonexistent\n", postgresUID, postgresUID)
	add(image.File{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/nonexistent\n" + account), Mode: 0o644})
	add(image.File{Path: "/etc/group", Data: fmt.Appendf(nil, "root:x:0:\npostgres:x:%d:\n", postgresUID), Mode: 0o644})
	add(image.File{Path: "/etc/nsswitch.conf", Data: []byte("passwd: files\ngroup: files\n"), Mode: 0o644})
	for _, d := range []struct {
		path string
		mode int64
	}{
		{"/var/lib/postgresql", 0o755},
		{pgData, 0o700},
		{"/var/run/postgresql", 0o2775},
	} {
		add(image.File{Path: d.path, Mode: d.mode, UID: postgresUID, GID: postgresUID})
	}
	img, err := image.FromFiles(withParents(files), image.Config{
		Entrypoint: []string{entrypointPath},
		Env: []string{
			"PATH=" + in.bin + ":/usr/local/bin:/usr/bin:/bin",
			"PGDATA=" + pgData,
			"TZ=UTC",
		},
		User:       fmt.Sprintf("%d:%d", postgresUID, postgresUID),
		WorkingDir: "/",
	}, image.Options{Platform: plat})
	if err != nil {
		return nil, fmt.Errorf("kubetest: image %s: %w", in.tag(), err)
	}
	return img, nil
}

// sharedLibraries lists the libraries the ELF files elves load, the
// dynamic loader among them, as ldd finds them on this machine.
func sharedLibraries(ctx context.Context, elves []string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ldd", elves...).Output()
	if err != nil {
		return nil, fmt.Errorf("kubetest: ldd %s: %w", strings.Join(elves, " "), err)
	}
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)",
		// "\t/lib64/ld-linux-x86-64.so.2 (0x...)", "\tlinux-vdso.so.1 (0x...)",
		// and each file's name, when there are several.
		line := strings.TrimSpace(sc.Text())
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("kubetest: ldd: %s", line)
		}
		if _, after, ok := strings.Cut(line, "=> "); ok {
			line = after
		}
		if p, _, ok := strings.Cut(line, " (0x"); ok && strings.HasPrefix(p, "/") {
			libs = append(libs, p)
		}
	}
	slices.Sort(libs)
	return slices.Compact(libs), nil
}

// withParents adds the directories that hold files and are not among
// them (root's, 0755), and sorts the lot by path, so a directory comes
// before what it holds.
func withParents(files []image.File) []image.File {
	have := map[string]bool{}
	for _, f := range files {
		have[f.Path] = true
	}
	out := slices.Clone(files)
	for _, f := range files {
		for d := filepath.Dir(f.Path); d != "/" && !have[d]; d = filepath.Dir(d) {
			have[d] = true
			out = append(out, image.File{Path: d, Mode: 0o755})
		}
	}
	slices.SortFunc(out, func(a, b image.File) int { return strings.Compare(a.Path, b.Path) })
	return out
}
