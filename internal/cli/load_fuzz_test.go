package cli

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/cli/clitest"
)

// fuzzLimit is how long one command line may take to be read and checked;
// one that takes longer hangs svclab load as surely as a panic crashes it.
const fuzzLimit = 2 * time.Second

// FuzzLoadFlags drives arbitrary command lines (arguments separated by
// newlines) through svclab load's flag and URL parsing and checks, short
// of sending: nothing may panic or hang, an accepted command line has a
// valid target, and every error names what the user typed (a flag, the
// URL, or a file) rather than a key they may never have seen. Files are
// neither read nor written: -f, -o and --dir are cleared, and --body
// @FILE reads "{}". Seeds are the bad-flag corpus; inputs once found to
// fail live under testdata/fuzz/FuzzLoadFlags.
func FuzzLoadFlags(f *testing.F) {
	f.Add("--rate\n100\nhttp://127.0.0.1:8080/cart")
	f.Add("--users\n4\n--think\n50ms\n--url\nhttp://127.0.0.1:8080/")
	f.Add("--call\nsvclab.echo.Echo/Echo\n--body\n{\"payload\":\"aGk=\"}\n--rate\n1\n127.0.0.1:9000")
	f.Add("--stage\nramp:10s:500\n--stage\nstep:5s:100\n-H\nX-A: 1\nhttp://[::1]:80/")
	f.Add("--rate\n1\n--set\nload.thresholds.p99_ms=5\n--body\n@-\n-X\nPOST\nhttp://127.0.0.1:1/")
	for _, b := range clitest.BadFlagCorpus("http://127.0.0.1:9/", "/nonexistent", "/nonexistent/f", "/nonexistent/nan.toml") {
		f.Add(strings.Join(b.Args, "\n"))
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\n")
		done := make(chan error, 1)
		go func() {
			o := new(loadOptions)
			c := o.command()
			if err := c.ParseFlags(args); err != nil {
				done <- nil // pflag's own errors name the flag
				return
			}
			o.file, o.out, o.dir = "", "", ""
			o.stdin = strings.NewReader("{}")
			o.open = func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("{}")), nil }
			cfg, err := o.config(c.Flags(), c.Flags().Args())
			if err == nil {
				if cfg.Target == "" {
					err = errors.New("accepted without a target")
				} else if verr := cfg.Validate(); verr != nil {
					err = errors.New("accepted an invalid config: " + verr.Error())
				} else {
					err = nil
				}
				done <- err
				return
			}
			for _, l := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(l, "load.") || strings.TrimSpace(l) == "" {
					done <- errors.New("an error that names no flag: " + err.Error())
					return
				}
			}
			done <- nil
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%q: %v", args, err)
			}
		case <-time.After(fuzzLimit):
			t.Fatalf("%q: reading the command line took more than %v", args, fuzzLimit)
		}
	})
}
