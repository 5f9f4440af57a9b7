package cli

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/svclab/svclab/internal/hostclock"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
	_ "github.com/svclab/svclab/proto/echo" // its types, for gRPC calls by name with a JSON body
)

func init() { rootCmd.AddCommand(newLoadCmd()) }

func newLoadCmd() *cobra.Command { return new(loadOptions).command() }

func (o *loadOptions) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "load [flags] [URL]",
		Short: "Drive a service with open- or closed-loop load and report latency",
		Long: `load sends requests to a service and reports latency per operation: from each
request's intended send time (free of coordinated omission) and from its
actual send (service time), with HdrHistogram percentiles, a per-second series
and the generator's own audit (late sends, CPU, GC pauses).

Settings are the keys of a spec's [load] table. They come from the file given
with -f, then --set load.KEY=VALUE, then flags, each later one winning; every
flag but -f, --set, -o, --dir, --allow-remote and -q stands for one key
(--rate is load.rate). The target must be on this machine (loopback) unless
--allow-remote is given. --users implies --mode closed, and --call (a gRPC
method, as ghz names it) implies --protocol grpc.

Exit status: 0 when the run completed; 1 when no request succeeded (the
reason is printed) or the run failed; 2 for bad flags or settings, checked
before anything is sent; 99 when a threshold ([load.thresholds]) was
broken, as k6 does. See docs/LOAD.md.`,
		Example: `  svclab load --rate 200 --duration 30s http://127.0.0.1:8080/cart
  svclab load --users 16 --think 50ms --url http://127.0.0.1:8080/
  svclab load --stage ramp:10s:500 --stage step:20s:500 -o summary.json http://127.0.0.1:8080/
  svclab load --call svclab.echo.Echo/Echo --body '{"payload":"aGk="}' --rate 100 127.0.0.1:9000
  svclab load -X POST --body @order.json --rate 50 --set load.thresholds.p99_ms=50 http://127.0.0.1:8080/orders
  # the spec's [load] settings against what svclab up experiments/quickstart.toml serves:
  svclab load -f experiments/quickstart.toml --rate 50 --dir out/ http://127.0.0.1:PORT/
  svclab load -f experiments/quickstart.toml --set load.arrival=poisson --dir out/ http://127.0.0.1:PORT/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stdin = cmd.InOrStdin()
			cfg, err := o.config(cmd.Flags(), args)
			for _, n := range o.notices {
				fmt.Fprintln(cmd.ErrOrStderr(), "svclab load:", n)
			}
			if err != nil {
				return err
			}
			if o.view, err = o.ui.start(cmd.ErrOrStderr(), loadExperiment(cfg)); err != nil {
				return err
			}
			err = runLoad(cmd.Context(), cfg, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			o.view.stop(err)
			return err
		},
	}
	f := c.Flags()
	f.StringVarP(&o.file, "file", "f", "", "TOML file whose [load] table gives the settings (a spec, or a file with just [load])")
	addSetFlag(c, &o.sets)
	f.Lookup("set").Usage = "override a [load] key, e.g. --set load.rate=100 (repeatable)"
	o.addKeyFlags(f)
	f.StringVarP(&o.out, "output", "o", "", "write summary.json here (- for stdout)")
	f.StringVar(&o.dir, "dir", "", "write every result file here: summary.json, timeseries.parquet, latency.hlog, service_time.hlog, samples.parquet")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow a target that is not on this machine")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no live progress line")
	o.addShardFlags(f)
	o.ui.addFlags(f)
	return c
}

// loadOptions are the flags of `svclab load` that are not [load] keys,
// and the values of those that are (keys, parallel to loadKeyFlags).
type loadOptions struct {
	file        string
	sets        []string
	out         string
	dir         string
	allowRemote bool
	quiet       bool
	keys        []*keyValue
	ui          uiOptions
	view        *uiView

	stdin   io.Reader                                // for --body @-
	open    func(name string) (io.ReadCloser, error) // for --body @FILE; os.Open when nil
	notices []string                                 // printed to stderr before the run
	by      setters                                  // what set each key, once config has run
	spec    *spec.Spec                               // the file read with -f, or nil

	shard        string // --shard I/N (loadshard.go)
	startAt      string // --start-at
	progressJSON bool   // --progress-json
}

// keyFlag is a flag of `svclab load` that stands for a key of the [load]
// table: --rate 50 is --set load.rate=50, and its value goes through the
// same strict decoding and validation as the key's in a spec. The value's
// type comes from the key's field in load.Config, so adding a setting is
// a field there and a line here.
type keyFlag struct {
	name, short string
	key         string // dotted, inside [load]
	usage       string
	// value, for a repeatable flag, turns all its values into the key's
	// value; table is the [load] table so far. Nil for a flag whose last
	// value is the key's.
	value func(table *spec.Spec, vals []string) (any, error)
	// read, when set, turns the flag's last value into the key's (--body
	// @file reads the file).
	read func(o *loadOptions, val string) (any, error)
}

var loadKeyFlags = []keyFlag{
	{"url", "", "target", "target: an http:// URL (path and query included), or host:port (or grpc://host:port) for gRPC, or unix:///path for a unix socket (any protocol)", nil, nil},
	{"mode", "", "mode", `"open" (arrivals at --rate) or "closed" (--users virtual users); default open`, nil, nil},
	{"protocol", "", "protocol", `"http" (HTTP/1.1), "h2c" or "grpc"; default http`, nil, nil},
	{"rate", "", "rate", "open loop: arrivals per second", nil, nil},
	{"arrival", "", "arrival", `open loop: "constant" or "poisson"; default constant`, nil, nil},
	{"duration", "d", "duration", "measurement window (default 10s, or the stages' total)", nil, nil},
	{"warmup", "", "warmup", "load before the measurement, not recorded", nil, nil},
	{"warmup-rate", "", "warmup_rate", "open loop: arrivals per second during the warm-up (default: --rate)", nil, nil},
	{"warmup-calls", "", "warmup_calls", "warm up with this many back-to-back calls (closed loop), bounded by --warmup, instead of load at a rate", nil, nil},
	{"warmup-users", "", "warmup_users", "users of the --warmup-calls loop (default 1)", nil, nil},
	{"users", "u", "users", "closed loop: virtual users (implies --mode closed)", nil, nil},
	{"think", "", "think_time", "closed loop: fixed think time after each iteration", nil, nil},
	{"think-min", "", "think_min", "closed loop: think time drawn uniformly from [think-min, think-max]", nil, nil},
	{"think-max", "", "think_max", "closed loop: upper bound of the think time", nil, nil},
	{"spawn-rate", "", "spawn_rate", "closed loop: users started per second (0: all at once)", nil, nil},
	{"connections", "c", "connections", "connections shared by all requests (0: one per concurrent request)", nil, nil},
	{"max-inflight", "", "max_inflight", fmt.Sprintf("open loop: arrivals beyond this many outstanding are dropped (default %d)", load.DefaultMaxInflight), nil, nil},
	{"timeout", "", "timeout", fmt.Sprintf("per-request timeout (default %s)", load.DefaultTimeout), nil, nil},
	{"requests", "n", "requests", "stop after this many requests (or flows)", nil, nil},
	{"raw-samples", "", "raw_samples", "write every request to samples.parquet (needs --dir)", nil, nil},
	{"seed", "", "seed", "seed for Poisson arrivals, think times and weighted picks (0: from the clock)", nil, nil},
	{"generators", "", "generators", "split the load over this many generator processes, started together (default 1)", nil, nil},
	{"stage", "", "stages", `load stage TYPE:DURATION:LEVEL, e.g. ramp:30s:500 (rate, or users in a closed loop); repeatable`, stagesValue, nil},
	{"call", "", "request.method", "gRPC method package.Service/Method, as ghz's --call (implies --protocol grpc)", nil, nil},
	{"method", "X", "request.method", "HTTP method (default GET); for a gRPC method use --call", nil, nil},
	{"body", "", "request.body", "request body; @FILE reads it from FILE and @- from stdin, as curl does; for gRPC the request message in JSON", nil, bodyValue},
	{"body-base64", "", "request.body_base64", "gRPC request as serialized proto bytes, base64", nil, nil},
	{"header", "H", "request.headers", `request header "Name: value"; repeatable`, headersValue, nil},
	{"expect-status", "", "request.expect_status", "HTTP status that counts as success (default: any below 400)", nil, nil},
	{"cacert", "", "tls.ca", "gRPC over TLS: PEM file of the CA that signs the server's certificate, as ghz's --cacert (svclab up prints a deploy.mtls entry's)", nil, nil},
	{"cert", "", "tls.cert", "gRPC over TLS: client certificate, PEM, with --key, for a server that asks for one", nil, nil},
	{"key", "", "tls.key", "gRPC over TLS: the client certificate's private key, PEM", nil, nil},
	{"server-name", "", "tls.server_name", "gRPC over TLS: the name the server's certificate must carry (default: the target's host)", nil, nil},
}

// keyValue is the pflag.Value of a keyFlag. It keeps what the user typed,
// every time, to be turned into the key's value once all flags are read.
type keyValue struct {
	vals       []string
	field      reflect.Type // of the key's field in load.Config
	repeatable bool
}

func (v *keyValue) String() string     { return strings.Join(v.vals, ",") }
func (v *keyValue) Set(s string) error { v.vals = append(v.vals, s); return nil }

// Type is the value's type as --help shows it.
func (v *keyValue) Type() string {
	switch {
	case v.repeatable:
		return "stringArray"
	case v.field == reflect.TypeFor[load.Duration]():
		return "duration"
	}
	return v.field.Kind().String()
}

// last is the key's value from the flag's last value: the text itself for
// a key read from a string (durations included); for numbers and booleans
// the value as Go's flag package reads it, so "--rate .5" and
// "--raw-samples=1" mean what they mean to every Go CLI; and otherwise the
// text read as --set reads it, so that "--rate abc" fails in the decoder
// as rate = "abc" does.
func (v *keyValue) last() any {
	raw := v.vals[len(v.vals)-1]
	if v.field.Kind() == reflect.String || reflect.PointerTo(v.field).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return raw
	}
	switch v.field.Kind() {
	case reflect.Float32, reflect.Float64:
		if f, err := strconv.ParseFloat(raw, 64); err == nil {
			return f
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i, err := strconv.ParseInt(raw, 0, 64); err == nil {
			return i
		}
	case reflect.Bool:
		if b, err := strconv.ParseBool(raw); err == nil {
			return b
		}
	}
	return spec.ParseValue(raw)
}

// addKeyFlags defines the flags of loadKeyFlags on fs, typed after their
// fields in load.Config.
func (o *loadOptions) addKeyFlags(fs *pflag.FlagSet) {
	for _, kf := range loadKeyFlags {
		t, ok := spec.FieldType(&load.Config{}, kf.key)
		if !ok {
			panic("svclab load: flag --" + kf.name + " names load." + kf.key + ", which load.Config has no field for")
		}
		if t.Kind() == reflect.Pointer { // a key whose written zero differs from its absence
			t = t.Elem()
		}
		v := &keyValue{field: t, repeatable: kf.value != nil}
		o.keys = append(o.keys, v)
		f := fs.VarPF(v, kf.name, kf.short, kf.usage)
		if v.Type() == "bool" {
			f.NoOptDefVal = "true"
		}
	}
}

// stagesValue reads each --stage TYPE:DURATION:LEVEL into a [[load.stages]]
// table; LEVEL is the stage's users when load.mode is "closed", else its
// rate. Type, duration and level are checked where the table's are.
func stagesValue(table *spec.Spec, vals []string) (any, error) {
	level := "rate"
	if m, _ := table.Lookup("load.mode"); m == "closed" {
		level = "users"
	}
	stages := make([]any, 0, len(vals))
	for _, v := range vals {
		p := strings.Split(v, ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("%q: want TYPE:DURATION:LEVEL, e.g. ramp:30s:500", v)
		}
		stages = append(stages, map[string]any{"type": p[0], "duration": p[1], level: spec.ParseValue(p[2])})
	}
	return stages, nil
}

// headersValue adds each --header "Name: value" to the headers the table
// already has.
func headersValue(table *spec.Spec, vals []string) (any, error) {
	h := map[string]any{}
	if m, ok := table.Lookup("load.request.headers"); ok {
		if m, ok := m.(map[string]any); ok {
			maps.Copy(h, m)
		}
	}
	for _, v := range vals {
		k, val, ok := strings.Cut(v, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%q: want \"Name: value\"", v)
		}
		h[strings.TrimSpace(k)] = strings.TrimSpace(val)
	}
	return h, nil
}

// bodyValue reads --body as curl reads -d: @FILE is the file's bytes,
// @- standard input's, anything else the text itself.
func bodyValue(o *loadOptions, val string) (any, error) {
	name, ok := strings.CutPrefix(val, "@")
	if !ok {
		return val, nil
	}
	var r io.Reader
	if name == "-" {
		r = o.stdin
		if r == nil {
			r = os.Stdin
		}
	} else {
		open := o.open
		if open == nil {
			open = func(name string) (io.ReadCloser, error) { return os.Open(name) }
		}
		f, err := open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	// One more byte than allowed tells a file at the limit from a longer one.
	b, err := io.ReadAll(io.LimitReader(r, maxBodyFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", val, err)
	}
	if len(b) > maxBodyFile {
		return nil, fmt.Errorf("%s is longer than %d MiB, more than a load test's request should be", val, maxBodyFile>>20)
	}
	return string(b), nil
}

// maxBodyFile bounds a body read with --body @FILE.
const maxBodyFile = 64 << 20

// config builds the [load] table from the file, then --set, then the key
// flags, and decodes and validates it as a spec's: an error about a key a
// flag or --set gave names that flag.
func (o *loadOptions) config(fs *pflag.FlagSet, args []string) (load.Config, error) {
	var cfg load.Config
	if len(args) > 1 {
		return cfg, usageError{fmt.Errorf("URL: give one target, got %d arguments: %s", len(args), spec.Echo(strings.Join(args, " ")))}
	}
	if len(args) == 1 {
		if fs.Changed("url") {
			return cfg, usageError{errors.New("give the target either as an argument or with --url, not both")}
		}
		if err := fs.Set("url", args[0]); err != nil {
			return cfg, usageError{err}
		}
	}
	table, file, err := o.table()
	if err != nil {
		return cfg, usageError{err}
	}
	by, err := o.override(table)
	if err != nil {
		return cfg, usageError{err}
	}
	if len(args) == 1 {
		by["load.target"] = setter{name: "URL"}
	}
	o.by, o.spec = by, file
	if err := load.Decode(table, &cfg); err != nil {
		return cfg, usageError{by.name(err, file)}
	}
	if cfg.RawSamples && o.dir == "" {
		return cfg, usageError{errors.New("--raw-samples needs --dir, where samples.parquet is written")}
	}
	if cfg.Target == "" {
		return cfg, usageError{errors.New("no target: give a URL, e.g. svclab load --rate 100 http://127.0.0.1:8080/")}
	}
	if o.given("call") && cfg.Protocol != load.GRPC {
		return cfg, usageError{fmt.Errorf("--call names a gRPC method, but the protocol is %q; an HTTP method is -X", cfg.Protocol)}
	}
	if err := grpcEntryWithoutCall(cfg); err != nil {
		return cfg, usageError{err}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{by.name(err, file)}
	}
	if o.given("method") && cfg.Protocol == load.GRPC {
		o.notices = append(o.notices, "-X/--method for a gRPC method is deprecated and will be removed; use --call, as ghz does")
	}
	if err := o.checkOutputs(); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// given reports whether the key flag called name was given.
func (o *loadOptions) given(name string) bool {
	for i, kf := range loadKeyFlags {
		if kf.name == name {
			return len(o.keys[i].vals) > 0
		}
	}
	return false
}

// checkOutputs checks that -o and --dir can be written before anything is
// sent, rather than failing once the whole load has run.
func (o *loadOptions) checkOutputs() error {
	if o.out != "" && o.out != "-" {
		if err := writable(o.out); err != nil {
			return fmt.Errorf("-o %s: %w", o.out, err)
		}
	}
	if o.dir != "" {
		if err := os.MkdirAll(o.dir, 0o755); err != nil {
			return fmt.Errorf("--dir %s: %w", o.dir, err)
		}
		f, err := os.CreateTemp(o.dir, ".svclab-probe-*")
		if err != nil {
			return fmt.Errorf("--dir %s: cannot write there: %w", o.dir, err)
		}
		f.Close()
		os.Remove(f.Name())
	}
	return nil
}

// writable checks that path can be written as a file: an existing file
// opened for writing (not truncated yet), or a new one created and
// removed.
func writable(path string) error {
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return errors.New("is a directory")
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(path)
}

// override applies --set, then the key flags, to table, and says which
// flag set each key. --users implies --mode closed and --call --protocol
// grpc, unless the mode or protocol is given on the command line too.
func (o *loadOptions) override(table *spec.Spec) (setters, error) {
	by := setters{}
	for _, a := range o.sets {
		key, _, _ := strings.Cut(a, "=")
		key = strings.TrimSpace(key)
		if !strings.HasPrefix(key, "load.") {
			return nil, fmt.Errorf("--set %s: svclab load reads only the [load] table; write load.KEY=VALUE", key)
		}
		if err := table.Set(a); err != nil {
			return nil, err
		}
		by[key] = setter{name: "--set " + key}
	}
	if o.given("call") && o.given("method") {
		return nil, errors.New("--call and -X/--method both name the method; give a gRPC method with --call, an HTTP one with -X")
	}
	for _, imp := range []struct{ flag, key, value, alone string }{
		{"users", "load.mode", string(load.Closed), "mode"},
		{"call", "load.protocol", string(load.GRPC), "protocol"},
	} {
		if !o.given(imp.flag) || o.given(imp.alone) || by[imp.key].name != "" {
			continue
		}
		if imp.flag == "users" && o.given("rate") {
			return nil, errors.New("--rate and --users: --rate drives an open loop, --users a closed one; give one, or --mode")
		}
		if err := table.SetValue(imp.key, imp.value); err != nil {
			return nil, fmt.Errorf("--%s: %w", imp.flag, err)
		}
		by[imp.key] = setter{name: "--" + imp.flag}
	}
	request := "" // a flag that sets [load.request]
	for i, kf := range loadKeyFlags {
		kv := o.keys[i]
		if len(kv.vals) == 0 {
			continue
		}
		var (
			v   any
			err error
		)
		switch {
		case kf.value != nil:
			v, err = kf.value(table, kv.vals)
		case kf.read != nil:
			v, err = kf.read(o, kv.vals[len(kv.vals)-1])
		default:
			v = kv.last()
		}
		if err != nil {
			if kf.value != nil {
				return nil, fmt.Errorf("--%s %w", kf.name, err)
			}
			return nil, fmt.Errorf("--%s: %w", kf.name, err)
		}
		key := "load." + kf.key
		if err := table.SetValue(key, v); err != nil {
			return nil, fmt.Errorf("--%s: %w", kf.name, err)
		}
		by[key] = setter{name: "--" + kf.name, vals: kv.vals}
		if request == "" && strings.HasPrefix(kf.key, "request.") {
			request = "--" + kf.name
		}
	}
	if _, flow := table.Lookup("load.flow"); flow && request != "" {
		return nil, fmt.Errorf("%s sets [load.request], but the file has a [load.flow]; a flow's requests are its steps", request)
	}
	return by, nil
}

// table is the [load] table of --file, or an empty one; file is the spec
// read, nil without --file.
func (o *loadOptions) table() (table, file *spec.Spec, err error) {
	if o.file == "" {
		table, err = spec.ParseTable("", nil, "load")
		return table, nil, err
	}
	b, err := os.ReadFile(o.file)
	if err != nil {
		return nil, nil, fmt.Errorf("--file: %w", err)
	}
	s, err := spec.ParseTable(o.file, b, "load")
	if err != nil {
		return nil, nil, err
	}
	if _, ok := s.Lookup("load"); !ok {
		return nil, nil, fmt.Errorf("%s has no [load] table", o.file)
	}
	return s, s, nil
}

// setter is what gave a key its value: a flag (with every value it was
// given, to name the one an error is about) or "--set key".
type setter struct {
	name string
	vals []string
}

// setters maps each key given on the command line to its setter.
type setters map[string]setter

// name turns each error about a key given on the command line into an
// error about the flag that gave it; the others are located in the file,
// when there is one.
func (by setters) name(err error, file *spec.Spec) error {
	parts := spec.Unjoin(err)
	out := make([]error, 0, len(parts))
	for _, p := range parts {
		var (
			se       *spec.Error
			ke       *spec.KeyError
			key, msg string
		)
		switch {
		case errors.As(p, &se):
			key, msg = se.Key, se.Err.Error()
		case errors.As(p, &ke):
			key, msg = ke.Key, ke.Msg
		}
		if label, ok := by.label(key); ok {
			out = append(out, fmt.Errorf("%s: %s", label, msg))
			continue
		}
		if ke != nil {
			// A key nobody wrote (users, for --mode closed) is named by
			// the flag that gives it, as that is what the user can type.
			// --call comes before -X in loadKeyFlags: an unset method
			// is an error only for gRPC.
			flag, fkey := flagFor(key)
			inFile := false
			if file != nil {
				_, inFile = file.Lookup(fkey)
			}
			switch {
			case flag != "" && (file == nil || !inFile):
				p = fmt.Errorf("--%s: %s", flag, msg)
			case file != nil:
				p = file.Locate("load", ke)
			}
		}
		out = append(out, p)
	}
	return errors.Join(out...)
}

// flagFor returns the key flag whose key holds key (the longest), and that
// key in full.
func flagFor(key string) (flag, flagKey string) {
	for _, kf := range loadKeyFlags {
		k := "load." + kf.key
		if (key == k || strings.HasPrefix(key, k+".") || strings.HasPrefix(key, k+"[")) && len(k) > len(flagKey) {
			flag, flagKey = kf.name, k
		}
	}
	return flag, flagKey
}

// label names what the user typed to give key: "--rate", or
// `--stage "jump:10s:5": type` for a part of one value of a repeatable
// flag. The longest key given that holds key wins.
func (by setters) label(key string) (string, bool) {
	best := ""
	for k := range by {
		if len(k) > len(best) && (key == k || strings.HasPrefix(key, k+".") || strings.HasPrefix(key, k+"[")) {
			best = k
		}
	}
	if best == "" {
		// An error about a table names the --set that wrote into it
		// (load.thresholds.operations."GET /x" for --set of its p99_ms).
		for k := range by {
			if strings.HasPrefix(k, key+".") && (best == "" || len(k) < len(best)) {
				best = k
			}
		}
		if best == "" {
			return "", false
		}
		return by[best].name, true
	}
	s, rest := by[best], key[len(best):]
	if rest == "" {
		return s.name, true
	}
	if i, sub, ok := elementOf(rest); ok && i < len(s.vals) {
		label := s.name + " " + strconv.Quote(s.vals[i])
		if sub != "" {
			label += ": " + sub
		}
		return label, true
	}
	name := s.name
	if len(s.vals) == 1 && strings.HasPrefix(rest, ".") {
		// The decoder names no element ("stages.duration"); with one value
		// given, it is that one.
		name += " " + strconv.Quote(s.vals[0])
	}
	return name + ": " + strings.TrimPrefix(rest, "."), true
}

// elementOf splits "[2].type" into 2 and "type".
func elementOf(rest string) (int, string, bool) {
	if !strings.HasPrefix(rest, "[") {
		return 0, "", false
	}
	idx, sub, ok := strings.Cut(rest[1:], "]")
	if !ok {
		return 0, "", false
	}
	i, err := strconv.Atoi(idx)
	if err != nil {
		return 0, "", false
	}
	return i, strings.TrimPrefix(sub, "."), true
}

// exitThresholds is the exit status of a run that broke a threshold, as
// k6 uses it.
const exitThresholds = 99

// exitError ends svclab with status code, after printing err.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func runLoad(ctx context.Context, cfg load.Config, o *loadOptions, stdout, stderr io.Writer) error {
	if !o.allowRemote {
		if err := load.CheckLoopback(cfg.Target); err != nil {
			return usageError{fmt.Errorf("%w; pass --allow-remote to load it anyway", err)}
		}
	}
	target, err := load.NewTarget(cfg)
	if err != nil {
		return usageError{o.by.name(err, o.spec)}
	}
	defer target.Close()
	sh, err := o.shardOf(&cfg)
	if err != nil {
		return err
	}
	opt := load.Options{Dir: o.dir, Shard: sh}
	if cfg.GeneratorCount() == 1 {
		// Several generators calibrate each for itself, and each runs
		// its own timer loop beside it, at its own share's gap.
		opt.HostTimer = calibrateHost(ctx, o.quiet, stderr)
		opt.Sentinel = hostclock.SentinelExecutable()
	}
	if opt.StartAt, err = o.startTime(); err != nil {
		return err
	}
	if o.shard != "" && !o.quiet {
		fmt.Fprintf(stderr, "svclab load: generator %s: %s\n", sh, shareLine(cfg, opt.StartAt))
	}
	live := false
	if f, ok := stderr.(*os.File); ok {
		live = term.IsTerminal(int(f.Fd()))
	}
	if o.progressJSON {
		opt.Progress = jsonProgress(stdout)
	} else if !o.quiet {
		opt.Progress = func(p load.Progress) {
			if live {
				fmt.Fprintf(stderr, "\r\033[K%s", p)
			} else {
				fmt.Fprintln(stderr, p)
			}
		}
	}
	opt.Progress = o.view.progress(opt.Progress)
	o.view.loadStarted(cfg)
	res, runErr := o.run(ctx, cfg, target, opt)
	o.view.loadFinished("load", res, runErr, cfg.Thresholds)
	if live && !o.quiet {
		fmt.Fprintln(stderr)
	}
	if res == nil {
		return runErr
	}
	defer res.Close()
	if o.shard != "" {
		return o.finishShard(res, sh, runErr, stdout)
	}
	if err := res.Table(stdout); err != nil {
		return err
	}
	tot, _ := res.Op("total")
	if cfg.Mode != load.Closed {
		// rps counts the arrivals of the window; completions show whether
		// the target kept up with them.
		offered := ""
		if len(cfg.Stages) == 0 {
			offered = fmt.Sprintf("offered %s/s, ", strconv.FormatFloat(cfg.Rate, 'f', -1, 64))
		}
		fmt.Fprintf(stdout, "open loop: %ssent %.1f/s, completed %.1f/s within the window\n", offered, tot.RPS, tot.CompletedRPS)
	}
	if o.dir != "" {
		if err := res.WriteDir(o.dir); err != nil {
			return fmt.Errorf("--dir: %w", err)
		}
	}
	if o.out != "" {
		b, err := json.MarshalIndent(res.Summary, "", "  ")
		if err != nil {
			return fmt.Errorf("encoding summary: %w", err)
		}
		b = append(b, '\n')
		if o.out == "-" {
			_, err = stdout.Write(b)
		} else {
			err = os.WriteFile(o.out, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("-o: %w", err)
		}
	}
	if runErr != nil {
		return runErr
	}
	breaches := cfg.Thresholds.Check(res.Summary)
	for _, b := range breaches {
		fmt.Fprintf(stderr, "threshold broken: %s\n", b)
	}
	if tot.Count == tot.Errors {
		return noSuccess(tot, cfg)
	}
	if len(breaches) > 0 {
		return exitError{exitThresholds, fmt.Errorf("%d threshold(s) of load.thresholds broken", len(breaches))}
	}
	return nil
}

// noSuccess says why a run in which no request succeeded failed.
func noSuccess(tot load.Operation, cfg load.Config) error {
	if tot.Count == 0 {
		return errors.New("no request was sent in the measurement window; lengthen --duration or raise --rate")
	}
	var classes []string
	for _, c := range slices.Sorted(maps.Keys(tot.ErrorsByClass)) {
		if n := tot.ErrorsByClass[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, n))
		}
	}
	hint := ""
	if cfg.Protocol == load.GRPC && cfg.TLS == nil && tot.ErrorsByClass["grpc_unavailable"] == tot.Count {
		// A TLS server closes a plaintext client's connection, which
		// gRPC reports as unavailable.
		hint = "; if the server speaks TLS (a deploy.mtls entry), give --cacert, and --cert and --key for its client certificate"
	}
	var why []string
	for _, c := range slices.Sorted(maps.Keys(tot.ErrorExamples)) {
		why = append(why, fmt.Sprintf("%s: %s", c, tot.ErrorExamples[c]))
	}
	first := ""
	if len(why) > 0 {
		first = "; the first of each: " + strings.Join(why, "; ")
	}
	return fmt.Errorf("no request succeeded: all %d failed (%s)%s%s", tot.Count, strings.Join(classes, ", "), first, hint)
}

// grpcEntryWithoutCall answers a gRPC target (grpc:// or grpc+tcp://, as
// svclab up prints an entry) given without a gRPC method: rather than ask
// for an http:// URL, it says to add --call, and lists the entry methods
// of svclab's apps, one of which an entry svclab up started serves.
func grpcEntryWithoutCall(cfg load.Config) error {
	scheme, _, ok := strings.Cut(cfg.Target, "://")
	if !ok || cfg.Protocol == load.GRPC || (!strings.EqualFold(scheme, "grpc") && !strings.EqualFold(scheme, "grpc+tcp")) {
		return nil
	}
	var lines []string
	example := "package.Service/Method --body '{...}'"
	for _, name := range runtime.Apps() {
		a, err := runtime.Lookup(name)
		if err != nil {
			continue
		}
		c := a.NewConfig()
		if c.Validate() != nil {
			continue // an app whose defaults need [app] keys to call it
		}
		var methods []string
		for _, r := range c.Requests() {
			m := strings.TrimPrefix(r.Method, "/")
			if slices.Contains(methods, m) {
				continue
			}
			methods = append(methods, m)
			if body := string(r.JSON()); len(lines) == 0 && len(methods) == 1 && len(body) <= 60 {
				example = m + " --body " + shellJoin([]string{body})
			}
		}
		if len(methods) > 0 {
			lines = append(lines, fmt.Sprintf("  %s: %s", name, strings.Join(methods, ", ")))
		}
	}
	return fmt.Errorf("%s is a gRPC entry: add --call with the method to call and --body with its request as JSON, e.g. svclab load --call %s --rate 100 %s; the entries of svclab's apps (as each app's defaults configure it) serve:\n%s",
		cfg.Target, example, cfg.Target, strings.Join(lines, "\n"))
}
