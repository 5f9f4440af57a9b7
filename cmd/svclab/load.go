package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/spec"
	_ "github.com/svclab/svclab/proto/echo" // its types, for gRPC calls by name with a JSON body
)

func init() { rootCmd.AddCommand(newLoadCmd()) }

// loadFlags are the flags of `svclab load`. Each one that maps to a key of
// the [load] table is listed in loadKeys, so errors from validation can
// name the flag the user typed.
type loadFlags struct {
	file        string
	url         string
	cfg         load.Config
	stages      []string
	method      string
	body        string
	bodyB64     string
	headers     []string
	expect      int
	out         string
	dir         string
	allowRemote bool
	quiet       bool
}

// loadKeys maps flag names to [load] keys.
var loadKeys = map[string]string{
	"url": "target", "mode": "mode", "protocol": "protocol", "rate": "rate", "arrival": "arrival",
	"duration": "duration", "warmup": "warmup", "users": "users", "think": "think_time",
	"think-min": "think_min", "think-max": "think_max", "spawn-rate": "spawn_rate",
	"connections": "connections", "max-inflight": "max_inflight", "timeout": "timeout",
	"requests": "requests", "raw-samples": "raw_samples", "seed": "seed", "stage": "stages",
	"method": "request.method", "body": "request.body", "body-base64": "request.body_base64",
	"header": "request.headers", "expect-status": "request.expect_status",
}

func newLoadCmd() *cobra.Command {
	var lf loadFlags
	var dur, warm, think, thinkMin, thinkMax, timeout time.Duration
	c := &cobra.Command{
		Use:   "load [flags] [URL]",
		Short: "Drive a service with open- or closed-loop load and report latency",
		Long: `load sends requests to a service and reports latency per operation: from each
request's intended send time (free of coordinated omission) and from its
actual send (service time), with HdrHistogram percentiles, a per-second series
and the generator's own audit (late sends, CPU, GC pauses).

Settings come from flags, or from the [load] table of a spec file given with
-f; flags override the table. The target must be on this machine (loopback)
unless --allow-remote is given. See docs/LOAD.md.`,
		Example: `  svclab load --rate 200 --duration 30s http://127.0.0.1:8080/cart
  svclab load --mode closed --users 16 --think 50ms --url http://127.0.0.1:8080/
  svclab load --stage ramp:10s:500 --stage step:20s:500 -o summary.json http://127.0.0.1:8080/
  svclab load --protocol grpc --method svclab.echo.Echo/Echo --body '{"payload":"aGk="}' 127.0.0.1:9000
  svclab load -f experiments/quickstart.toml --rate 50 --dir out/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			fs := cmd.Flags()
			set := func(name string, apply func()) {
				if fs.Changed(name) {
					apply()
				}
			}
			set("duration", func() { lf.cfg.Duration = load.Duration(dur) })
			set("warmup", func() { lf.cfg.Warmup = load.Duration(warm) })
			set("think", func() { lf.cfg.ThinkTime = load.Duration(think) })
			set("think-min", func() { lf.cfg.ThinkMin = load.Duration(thinkMin) })
			set("think-max", func() { lf.cfg.ThinkMax = load.Duration(thinkMax) })
			set("timeout", func() { lf.cfg.Timeout = load.Duration(timeout) })
			if len(args) > 1 {
				return usageError{fmt.Errorf("load takes at most one URL, got %d arguments", len(args))}
			}
			if len(args) == 1 {
				if fs.Changed("url") {
					return usageError{errors.New("give the target either as an argument or with --url, not both")}
				}
				lf.url = args[0]
				fs.Lookup("url").Changed = true
			}
			cfg, err := lf.config(fs)
			if err != nil {
				return err
			}
			return runLoad(cmd.Context(), cfg, &lf, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVarP(&lf.file, "file", "f", "", "TOML file whose [load] table gives the settings (a spec, or a file with just [load])")
	f.StringVar(&lf.url, "url", "", "target: an http:// URL (path and query included), or host:port for gRPC")
	f.StringVar(&lf.cfg.Mode, "mode", "", `"open" (arrivals at --rate) or "closed" (--users virtual users); default open`)
	f.StringVar(&lf.cfg.Protocol, "protocol", "", `"http" (HTTP/1.1), "h2c" or "grpc"; default http`)
	f.Float64Var(&lf.cfg.Rate, "rate", 0, "open loop: arrivals per second")
	f.StringVar(&lf.cfg.Arrival, "arrival", "", `open loop: "constant" or "poisson"; default constant`)
	f.DurationVarP(&dur, "duration", "d", 0, "measurement window (default 10s, or the stages' total)")
	f.DurationVar(&warm, "warmup", 0, "load before the measurement, not recorded")
	f.IntVarP(&lf.cfg.Users, "users", "u", 0, "closed loop: virtual users")
	f.DurationVar(&think, "think", 0, "closed loop: fixed think time after each iteration")
	f.DurationVar(&thinkMin, "think-min", 0, "closed loop: think time drawn uniformly from [think-min, think-max]")
	f.DurationVar(&thinkMax, "think-max", 0, "closed loop: upper bound of the think time")
	f.Float64Var(&lf.cfg.SpawnRate, "spawn-rate", 0, "closed loop: users started per second (0: all at once)")
	f.IntVarP(&lf.cfg.Connections, "connections", "c", 0, "connections shared by all requests (0: one per concurrent request)")
	f.IntVar(&lf.cfg.MaxInflight, "max-inflight", 0, fmt.Sprintf("open loop: arrivals beyond this many outstanding are dropped (default %d)", load.DefaultMaxInflight))
	f.DurationVar(&timeout, "timeout", 0, fmt.Sprintf("per-request timeout (default %s)", load.DefaultTimeout))
	f.Int64VarP(&lf.cfg.Requests, "requests", "n", 0, "stop after this many requests (or flows)")
	f.BoolVar(&lf.cfg.RawSamples, "raw-samples", false, "write every request to samples.parquet (needs --dir)")
	f.Int64Var(&lf.cfg.Seed, "seed", 0, "seed for Poisson arrivals, think times and weighted picks (0: from the clock)")
	f.StringArrayVar(&lf.stages, "stage", nil, `load stage TYPE:DURATION:LEVEL, e.g. ramp:30s:500 (rate, or users in a closed loop); repeatable`)
	f.StringVarP(&lf.method, "method", "X", "", "HTTP method (default GET), or the gRPC method package.Service/Method")
	f.StringVar(&lf.body, "body", "", "request body; for gRPC the request message in JSON")
	f.StringVar(&lf.bodyB64, "body-base64", "", "gRPC request as serialized proto bytes, base64")
	f.StringArrayVarP(&lf.headers, "header", "H", nil, `request header "Name: value"; repeatable`)
	f.IntVar(&lf.expect, "expect-status", 0, "HTTP status that counts as success (default: any below 400)")
	f.StringVarP(&lf.out, "output", "o", "", "write summary.json here (- for stdout)")
	f.StringVar(&lf.dir, "dir", "", "write every result file here: summary.json, timeseries.parquet, latency.hlog, service_time.hlog, samples.parquet")
	f.BoolVar(&lf.allowRemote, "allow-remote", false, "allow a target that is not on this machine")
	f.BoolVarP(&lf.quiet, "quiet", "q", false, "no live progress line")
	return c
}

// config merges the file's [load] table and the flags, flags winning.
func (lf *loadFlags) config(fs *pflag.FlagSet) (load.Config, error) {
	var (
		cfg  load.Config
		file *spec.Spec
	)
	if lf.file != "" {
		c, s, err := readLoadTable(lf.file)
		if err != nil {
			return cfg, err
		}
		cfg, file = c, s
	}
	ch := fs.Changed
	fl := &lf.cfg
	if ch("url") {
		cfg.Target = lf.url
	}
	if ch("mode") {
		cfg.Mode = fl.Mode
	}
	if ch("protocol") {
		cfg.Protocol = fl.Protocol
	}
	if ch("rate") {
		cfg.Rate = fl.Rate
	}
	if ch("arrival") {
		cfg.Arrival = fl.Arrival
	}
	for _, d := range []struct {
		name     string
		dst, src *load.Duration
	}{{"duration", &cfg.Duration, &fl.Duration}, {"warmup", &cfg.Warmup, &fl.Warmup}, {"think", &cfg.ThinkTime, &fl.ThinkTime},
		{"think-min", &cfg.ThinkMin, &fl.ThinkMin}, {"think-max", &cfg.ThinkMax, &fl.ThinkMax}, {"timeout", &cfg.Timeout, &fl.Timeout}} {
		if ch(d.name) {
			*d.dst = *d.src
		}
	}
	if ch("users") {
		cfg.Users = fl.Users
	}
	if ch("spawn-rate") {
		cfg.SpawnRate = fl.SpawnRate
	}
	if ch("connections") {
		cfg.Connections = fl.Connections
	}
	if ch("max-inflight") {
		cfg.MaxInflight = fl.MaxInflight
	}
	if ch("requests") {
		cfg.Requests = fl.Requests
	}
	if ch("raw-samples") {
		cfg.RawSamples = fl.RawSamples
	}
	if ch("seed") {
		cfg.Seed = fl.Seed
	}
	if ch("stage") {
		cfg.Stages = nil
		closed := cfg.Mode == "closed"
		for _, s := range lf.stages {
			st, err := parseStage(s, closed)
			if err != nil {
				return cfg, usageError{fmt.Errorf("--stage %q: %w", s, err)}
			}
			cfg.Stages = append(cfg.Stages, st)
		}
	}
	if ch("method") || ch("body") || ch("body-base64") || ch("header") || ch("expect-status") {
		if cfg.Flow != nil {
			return cfg, usageError{errors.New("--method, --body, --header and --expect-status set a single request, but the file has a [load.flow]")}
		}
		if cfg.Request == nil {
			cfg.Request = &load.Request{}
		}
		r := cfg.Request
		if ch("method") {
			r.Method = lf.method
		}
		if ch("body") {
			r.Body = lf.body
		}
		if ch("body-base64") {
			r.BodyBase64 = lf.bodyB64
		}
		if ch("expect-status") {
			r.ExpectStatus = lf.expect
		}
		for _, h := range lf.headers {
			k, v, ok := strings.Cut(h, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return cfg, usageError{fmt.Errorf("--header %q: want \"Name: value\"", h)}
			}
			if r.Headers == nil {
				r.Headers = map[string]string{}
			}
			r.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if cfg.RawSamples && lf.dir == "" {
		return cfg, usageError{errors.New("--raw-samples needs --dir, where samples.parquet is written")}
	}
	if cfg.Target == "" {
		return cfg, usageError{errors.New("no target: give a URL, e.g. svclab load --rate 100 http://127.0.0.1:8080/")}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{locateErrors(err, fs, file)}
	}
	return cfg, nil
}

// locateErrors points each invalid key at what the user typed: the flag
// when one set it, else the line of the --file that did.
func locateErrors(err error, fs *pflag.FlagSet, file *spec.Spec) error {
	flagOf := map[string]string{}
	for flag, key := range loadKeys {
		if fs.Changed(flag) {
			flagOf["load."+key] = flag
		}
	}
	parts := spec.Unjoin(err)
	out := make([]error, 0, len(parts))
	for _, p := range parts {
		var ke *spec.KeyError
		if !errors.As(p, &ke) {
			out = append(out, p)
			continue
		}
		base, rest, _ := strings.Cut(ke.Key, "[")
		switch flag, byFlag := flagOf[base]; {
		case byFlag:
			if rest != "" {
				rest = "[" + rest
			}
			out = append(out, fmt.Errorf("--%s%s: %s", flag, rest, ke.Msg))
		case file != nil:
			out = append(out, file.Locate("load", ke))
		default:
			out = append(out, ke)
		}
	}
	return errors.Join(out...)
}

// parseStage reads TYPE:DURATION:LEVEL.
func parseStage(s string, closed bool) (load.Stage, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return load.Stage{}, errors.New("want TYPE:DURATION:LEVEL, e.g. ramp:30s:500")
	}
	switch parts[0] {
	case "ramp", "step":
	default:
		return load.Stage{}, fmt.Errorf("unknown stage type %q: want ramp or step", parts[0])
	}
	d, err := time.ParseDuration(parts[1])
	if err != nil {
		return load.Stage{}, fmt.Errorf("duration: %w", err)
	}
	lvl, err := strconv.ParseFloat(parts[2], 64)
	if err != nil {
		return load.Stage{}, fmt.Errorf("level %q is not a number", parts[2])
	}
	st := load.Stage{Type: parts[0], Duration: load.Duration(d)}
	if closed {
		if lvl != float64(int(lvl)) {
			return load.Stage{}, fmt.Errorf("users %q must be a whole number", parts[2])
		}
		st.Users = int(lvl)
	} else {
		st.Rate = lvl
	}
	return st, nil
}

// readLoadTable decodes the [load] table of path strictly, with errors at
// their key and line; a file with none of the spec's tables is taken as the
// [load] table itself.
func readLoadTable(path string) (load.Config, *spec.Spec, error) {
	var cfg load.Config
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, nil, usageError{fmt.Errorf("--file: %w", err)}
	}
	s, err := spec.ParseTable(path, b, "load")
	if err != nil {
		return cfg, nil, usageError{err}
	}
	if _, ok := s.Lookup("load"); !ok {
		return cfg, nil, usageError{fmt.Errorf("%s has no [load] table", path)}
	}
	if err := s.Decode("load", &cfg); err != nil {
		return cfg, nil, usageError{err}
	}
	return cfg, s, nil
}

func runLoad(ctx context.Context, cfg load.Config, lf *loadFlags, stdout, stderr io.Writer) error {
	if !lf.allowRemote {
		if err := load.CheckLoopback(cfg.Target); err != nil {
			return usageError{fmt.Errorf("%w; pass --allow-remote to load it anyway", err)}
		}
	}
	target, err := load.NewTarget(cfg)
	if err != nil {
		return err
	}
	defer target.Close()
	opt := load.Options{Dir: lf.dir}
	if lf.dir != "" {
		if err := os.MkdirAll(lf.dir, 0o755); err != nil {
			return fmt.Errorf("--dir: %w", err)
		}
	}
	live := false
	if f, ok := stderr.(*os.File); ok {
		live = term.IsTerminal(int(f.Fd()))
	}
	if !lf.quiet {
		opt.Progress = func(p load.Progress) {
			if live {
				fmt.Fprintf(stderr, "\r\033[K%s", p)
			} else {
				fmt.Fprintln(stderr, p)
			}
		}
	}
	res, runErr := load.Run(ctx, cfg, target, opt)
	if live && !lf.quiet {
		fmt.Fprintln(stderr)
	}
	if res == nil {
		return runErr
	}
	defer res.Close()
	if err := res.Table(stdout); err != nil {
		return err
	}
	if lf.dir != "" {
		if err := res.WriteDir(lf.dir); err != nil {
			return err
		}
	}
	if lf.out != "" {
		b, err := json.MarshalIndent(res.Summary, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding summary: %w", err)
		}
		b = append(b, '\n')
		if lf.out == "-" {
			_, err = stdout.Write(b)
		} else {
			err = os.WriteFile(lf.out, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("-o: %w", err)
		}
	}
	return runErr
}
