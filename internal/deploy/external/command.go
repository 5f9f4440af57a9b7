package external

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/child"
)

// tailLines is how many of a command's last output lines an error shows.
const tailLines = 20

// stopGrace is how long a command that ran out of time has after SIGTERM.
const stopGrace = 2 * time.Second

// run runs argv (setup or teardown, named what) in dir within timeout,
// its output into log when set, and fails with its last output lines
// when it exits non-zero or runs out of time.
//
// The output goes to a file, not a pipe: a setup that starts a server in
// the background leaves it holding its output, and a pipe would keep the
// wait open for as long as that server runs. The command runs in a
// process group of its own, ended only when it runs out of time; what it
// started and left running is the system's, and stays.
func run(ctx context.Context, what string, argv []string, dir string, timeout time.Duration, log io.Writer) error {
	out, err := os.CreateTemp("", "svclab-"+what+"-*.log")
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	started := time.Now()
	c, err := child.Start(cmd, child.KeepLeftovers())
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, quote(argv), err)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ended := false
	select {
	case <-c.Done():
	case <-tctx.Done():
		ended = true
		_ = c.Stop(context.Background(), syscall.SIGTERM, stopGrace)
	}
	tail := lastLines(out.Name(), tailLines)
	if log != nil {
		for _, l := range tail {
			fmt.Fprintf(log, "[%s] %s\n", what, l)
		}
	}
	switch {
	case ended && ctx.Err() != nil:
		return fmt.Errorf("%s %s: %w", what, quote(argv), ctx.Err())
	case ended:
		return fmt.Errorf("%s %s did not finish within %s (deploy.external.setup_timeout); its last output:\n%s", what, quote(argv), timeout, deploy.IndentTail(tail))
	case c.Err() != nil:
		return fmt.Errorf("%s %s failed after %s: %w; its last output:\n%s", what, quote(argv), time.Since(started).Round(time.Millisecond), c.Err(), deploy.IndentTail(tail))
	}
	return nil
}

// lastLines reads the last n lines of the file at path.
func lastLines(path string, n int) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return []string{fmt.Sprintf("(output not read: %v)", err)}
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines[max(0, len(lines)-n):]
}

// quote writes argv for a message.
func quote(argv []string) string { return fmt.Sprintf("%q", argv) }

// lookCommand checks that argv[0] can run from dir: a path (with a slash)
// relative to dir, or a name on PATH.
func lookCommand(argv0, dir string) error {
	if !strings.Contains(argv0, "/") {
		if _, err := exec.LookPath(argv0); err != nil {
			return fmt.Errorf("%q is not on PATH", argv0)
		}
		return nil
	}
	p := argv0
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("%q: %w (a relative path is read from the spec's directory, %s)", argv0, errors.Unwrap(err), dir)
	case fi.IsDir():
		return fmt.Errorf("%q is a directory", argv0)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%q is not executable (chmod +x it)", argv0)
	}
	return nil
}
