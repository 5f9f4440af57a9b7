// Package spec reads svclab spec files: TOML with the tables [app],
// [deploy], [load] and [experiment].
//
// The package checks syntax, types and unknown keys, and gives every error
// the file, line and dotted key it is about. It does not know the apps, the
// load generator or the deployers: callers decode [app], [load] and a
// deployer's tables of [deploy] (DeployerTables) into their own structs
// with Decode, and report semantic errors with Errorf, so that every error
// a user meets has the same shape. Factor levels from [experiment] are applied with
// With, which yields the effective spec of one run.
package spec

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// bom is the UTF-8 encoding of U+FEFF, the byte-order mark.
const bom = "\uFEFF"

// Tables are the top-level tables a spec may have.
var Tables = []string{"app", "deploy", "load", "experiment"}

// Error is a problem with a spec, located at a key and a line, or at the
// --set flag that gave the key its value.
type Error struct {
	File string
	Line int    // 0 when unknown
	Key  string // dotted key; empty for whole-file problems
	// Flag is the --set assignment that set the value, as typed on the
	// command line; when it is not empty, it stands for File and Line.
	Flag string
	Err  error
	// unwritten: the key has no value in the spec, so the error is about
	// its default (Errors.AddLater).
	unwritten bool
	// about is the key of the effective spec the error is about, when
	// Key names the factor that set it (unknownKey), so that the errors
	// of later checks at it are left out as at Key (Errors.AddLater).
	about string
	// ofName: the error is about the table at Key as a whole, not what
	// it holds (NameErrorf).
	ofName bool
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Flag != "" {
		b.WriteString(e.Flag)
	} else {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(cut(e.Key) + ": ")
	}
	b.WriteString(shortenQuoted(e.Err.Error()))
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Spec is one parsed spec file, or the effective spec of one run when
// factor levels have been applied.
type Spec struct {
	Path   string
	Source []byte

	App        App
	Deploy     Deploy
	Experiment Experiment
	// Overrides are the --set assignments applied after parsing, in order.
	Overrides []string

	tree  map[string]any
	index keyIndex
	// setBy maps a key whose value a factor level replaced to the key of
	// that factor (FactorKey, or a key inside a linked factor's level), so
	// errors about it point at the factor.
	setBy map[string]string
	// setByFlag maps a key a --set flag replaced to that flag as typed, so
	// errors about it name the flag rather than a line of the file.
	setByFlag map[string]string
	// lineShift is subtracted from every line, for a file parsed behind a
	// table header it does not have (ParseTable).
	lineShift int
	// designUnknown: [experiment] has a mistake that the design points
	// follow from (DesignKnown).
	designUnknown bool
}

// App is the [app] table's common part; the rest belongs to the app and is
// read with Decode("app", ...).
type App struct {
	Name string
}

// Deploy is the [deploy] table.
type Deploy struct {
	// Deployer names a registered deployer; "local" by default. The
	// deploy package checks the name, as the spec knows no deployer.
	Deployer string `toml:"deployer"`
	// Transport carries calls across groups: grpc (default), http, netrpc,
	// protorpc, or inproc when everything runs in one group.
	Transport string `toml:"transport"`
	// Placement names an entry of Placements, or one of the built-in
	// placements "monolith" and "split".
	Placement string `toml:"placement"`
	// Placements maps a name to a list of groups; a group is a list of
	// component names that share one process.
	Placements map[string][][]string `toml:"placements"`
	// Network is "tcp", "unix", or empty for the transport's preference (tcp for every network transport).
	Network string `toml:"network"`
	// HTTPCodec is how the http transport reads and writes JSON: one of
	// HTTPCodecs, HTTPCodecFast by default.
	HTTPCodec string `toml:"http_codec"`
	// StartTimeout bounds how long deployment may take.
	StartTimeout Duration `toml:"start_timeout"`
	// HTTPLimits bound what one client can make an HTTP listener (the
	// gateway, and every server of the http transport) hold.
	HTTPLimits HTTPLimits `toml:"http_limits"`
	// Sidecar is the proxy program beside every process, one of Sidecars
	// (SidecarNone by default); see docs/DEPLOY.md.
	Sidecar string `toml:"sidecar"`
	// ProxyMode is one proxy per process or one per host, one of
	// ProxyModes (ProxyModeSidecar by default).
	ProxyMode string `toml:"proxy_mode"`
	// Replicas, Balancer and Autoscale scale groups out (scaling.go).
	Replicas  map[string]int       `toml:"replicas"`
	Balancer  string               `toml:"balancer"`
	Autoscale map[string]Autoscale `toml:"autoscale"`
	// Resources maps a group or component name to the limits of each of
	// its processes (cgroups).
	Resources map[string]Resources `toml:"resources"`
	// MTLS, Tracing and Metrics are the in-process mesh features (mesh.go).
	MTLS    bool    `toml:"mtls"`
	Tracing float64 `toml:"tracing"`
	Metrics bool    `toml:"metrics"`
	// TelemetryCPUs is where the tracing and metrics backends run under
	// experiment.isolation: one of TelemetryCPUsOptions (mesh.go).
	TelemetryCPUs string `toml:"telemetry_cpus"`
	// Languages maps a component to the language of its implementation:
	// "go" (the default), "java" or "python" (runtime checks the names).
	Languages map[string]string `toml:"languages"`
	// Faults and Resilience are faults injected during the measurement
	// and the client middleware that rides them out (faults.go).
	Faults     Faults     `toml:"faults"`
	Resilience Resilience `toml:"resilience"`
}

// HTTPLimits are [deploy.http_limits]: the limits a production net/http
// server sets, so that one careless or hostile client cannot hold a
// listener's memory or connections. A key left out takes its default
// (DefaultHTTPLimits); a timeout written as "0s" turns that timeout off.
type HTTPLimits struct {
	// MaxBody is the largest request body; a larger one is answered 413
	// before it is read.
	MaxBody ByteSize `toml:"max_body"`
	// MaxHeader bounds the request line and headers.
	MaxHeader ByteSize `toml:"max_header"`
	// ReadHeaderTimeout bounds the time to read a request's headers, which
	// cuts off a client that trickles them.
	ReadHeaderTimeout Duration `toml:"read_header_timeout"`
	// ReadTimeout bounds the time to read a whole request, body included.
	ReadTimeout Duration `toml:"read_timeout"`
	// IdleTimeout closes a keep-alive connection with no request for this
	// long.
	IdleTimeout Duration `toml:"idle_timeout"`
}

// DefaultHTTPLimits fit svclab's largest message (S3's LargeSize, about
// 800 KB of JSON) twenty times over, and a loaded loopback call's latency
// many thousand times over.
var DefaultHTTPLimits = HTTPLimits{
	MaxBody:           16 << 20,
	MaxHeader:         64 << 10,
	ReadHeaderTimeout: Duration(10 * time.Second),
	ReadTimeout:       Duration(time.Minute),
	IdleTimeout:       Duration(2 * time.Minute),
}

// Defaults for [deploy].
const (
	DefaultDeployer     = "local"
	DefaultTransport    = "grpc"
	DefaultPlacement    = "monolith"
	DefaultStartTimeout = 20 * time.Second
)

// The values of deploy.http_codec: code generated for each message
// (internal/jsongen), or protojson alone, so that the JSON library's cost
// can be a factor.
const (
	HTTPCodecFast      = "fast"
	HTTPCodecProtojson = "protojson"
)

// HTTPCodecs lists the values of deploy.http_codec, the default first.
var HTTPCodecs = []string{HTTPCodecFast, HTTPCodecProtojson}

// Duration is a time.Duration written in TOML as a string such as "30s".
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	v, err := time.ParseDuration(text)
	switch {
	case err == nil:
	case bareNumberRE.MatchString(text):
		return fmt.Errorf("needs a unit, e.g. \"%ss\"", text)
	case durationShapeRE.MatchString(text):
		return fmt.Errorf("too long: a duration is at most %s, got %q", time.Duration(math.MaxInt64), text)
	default:
		return fmt.Errorf("not a duration (write e.g. \"30s\" or \"1m30s\"): %q", text)
	}
	if v < 0 {
		return fmt.Errorf("must not be negative, got %s", v)
	}
	*d = Duration(v)
	return nil
}

var (
	bareNumberRE    = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)$`)
	durationShapeRE = regexp.MustCompile(`^[-+]?(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)
)

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d Duration) String() string { return time.Duration(d).String() }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Load reads and parses a spec file, with --set overrides (see Set).
func Load(path string, sets ...string) (*Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return Parse(path, src, sets...)
}

// Parse parses a spec from src; path is used in error messages. The
// --set overrides in sets (see Set) are applied before the spec is
// checked. When the file parses but [deploy] or [experiment] is wrong,
// Parse returns the spec with the error, so that a caller can check the
// other tables in the same pass (experiment.Check); it is not fit for
// anything else.
func Parse(path string, src []byte, sets ...string) (*Spec, error) {
	return parse(path, src, 0, sets)
}

// ParseTable parses src as a whole spec when it has any of the spec's
// tables, and otherwise as the keys of one table (a file holding only
// `rate = 100` and the like is read as [load]). Lines in errors are those
// of src either way.
func ParseTable(path string, src []byte, table string) (*Spec, error) {
	src = bytes.TrimPrefix(src, []byte(bom))
	var doc map[string]any
	if err := toml.Unmarshal(src, &doc); err == nil {
		for _, t := range Tables {
			if _, ok := doc[t]; ok {
				return Parse(path, src)
			}
		}
	}
	s, err := parse(path, append([]byte("["+table+"]\n"), src...), 1, nil)
	if err != nil {
		return nil, err
	}
	s.Source = src
	return s, nil
}

func parse(path string, src []byte, lineShift int, sets []string) (*Spec, error) {
	s := &Spec{Path: path, Source: src, setBy: map[string]string{}, lineShift: lineShift}
	// Editors on some systems start UTF-8 files with a byte-order mark,
	// which TOML does not allow; it carries no meaning, so drop it.
	doc := bytes.TrimPrefix(src, []byte(bom))
	if err := toml.Unmarshal(doc, &s.tree); err != nil {
		return nil, s.syntaxError(doc, err)
	}
	if s.tree == nil {
		s.tree = map[string]any{}
	}
	s.index = indexKeys(doc)
	// Every flag's mistake at once; the file is checked once the
	// command line is right, as a flag may mend it.
	var flagErrs Errors
	for _, a := range sets {
		flagErrs.Add(s.assign(a))
	}
	if err := flagErrs.Err(); err != nil {
		return nil, err
	}
	topErr := s.checkTopLevel()
	if topErr != nil {
		// What is no table of a spec is reported, and the tables are
		// checked without it.
		for k, v := range s.tree {
			if _, ok := v.(map[string]any); !ok || !slices.Contains(Tables, k) {
				delete(s.tree, k)
			}
		}
	}
	if err := Join(topErr, s.decodeOwn()); err != nil {
		// The tree is sound, so the caller may check [app] and [load]
		// too and report their mistakes with these.
		return s, err
	}
	return s, nil
}

// checkTopLevel refuses every key at the top of the file that is not one
// of the Tables, or not a table.
func (s *Spec) checkTopLevel() error {
	var errs Errors
	for _, k := range s.index.order {
		if strings.Contains(k, ".") || strings.Contains(k, "[") {
			continue
		}
		if !slices.Contains(Tables, k) {
			errs.Add(s.Errorf(k, "unknown table (a spec has only [%s])", strings.Join(Tables, "], [")))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.tree)) {
		if !slices.Contains(Tables, k) {
			errs.Add(s.Errorf(k, "unknown table (a spec has only [%s])", strings.Join(Tables, "], [")))
		} else if _, ok := s.tree[k].(map[string]any); !ok {
			errs.Add(s.Errorf(k, "must be a table, e.g. [%s]", k))
		}
	}
	return errs.Err()
}

// decodeOwn decodes the tables this package owns: [deploy], [experiment],
// and app.name.
func (s *Spec) decodeOwn() error {
	return Join(s.decodeDeploy(), s.decodeExperiment())
}

// decodeDeploy decodes app.name and [deploy], the part of the spec that
// factor levels can change. It reports every mistake it finds: the checks
// of values run on what decoded, past the keys that did not.
func (s *Spec) decodeDeploy() error {
	var errs Errors
	app, _ := s.tree["app"].(map[string]any)
	if name, ok := app["name"]; ok {
		str, ok := name.(string)
		if !ok || str == "" {
			errs.Add(s.Errorf("app.name", "must be a non-empty string naming the app"))
		}
		s.App.Name = str
	}
	s.Deploy = Deploy{}
	errs.Add(s.Decode("deploy", &s.Deploy))
	// Defaults fill keys left out; a key written as "" is a mistake its
	// owner reports with the valid values (deploy.Resolve for the
	// deployer, runtime.Resolve for transport and placement).
	if !s.written("deploy.deployer") {
		s.Deploy.Deployer = DefaultDeployer
	}
	if !s.written("deploy.transport") {
		s.Deploy.Transport = DefaultTransport
	}
	if !s.written("deploy.placement") {
		s.Deploy.Placement = DefaultPlacement
	}
	if !s.written("deploy.start_timeout") {
		s.Deploy.StartTimeout = Duration(DefaultStartTimeout)
	} else if s.Deploy.StartTimeout <= 0 {
		// "0s" read as the default once: a value means what it says,
		// and no deployment is ready in no time.
		errs.AddLater(s.Errorf("deploy.start_timeout", "must be positive, e.g. \"30s\", got %s (leave the key out for %s)", s.Deploy.StartTimeout, DefaultStartTimeout))
	}
	errs.AddLater(s.defaultHTTPLimits())
	if n := s.Deploy.Network; n != "tcp" && n != "unix" && (n != "" || s.written("deploy.network")) {
		errs.AddLater(s.Errorf("deploy.network", "must be \"tcp\" or \"unix\", got %q (leave the key out for the transport's own choice)", n))
	}
	if !s.written("deploy.http_codec") {
		s.Deploy.HTTPCodec = HTTPCodecFast
	}
	if c := s.Deploy.HTTPCodec; !slices.Contains(HTTPCodecs, c) {
		errs.AddLater(s.Errorf("deploy.http_codec", "must be %q or %q, got %q", HTTPCodecFast, HTTPCodecProtojson, c))
	}
	for _, check := range []func() error{s.checkResources, s.checkSidecar, s.checkMesh, s.checkResilience, s.checkScaling} {
		errs.AddLater(check())
	}
	return errs.Err()
}

// defaultHTTPLimits fills the limits left out and checks the sizes, which
// net/http cannot take as zero.
func (s *Spec) defaultHTTPLimits() error {
	l, d := &s.Deploy.HTTPLimits, DefaultHTTPLimits
	for _, f := range []struct {
		key       string
		v, def    *int64
		isSize    bool
		minimum   int64
		minReason string
	}{
		{"max_body", (*int64)(&l.MaxBody), (*int64)(&d.MaxBody), true, 1, "at least 1B"},
		{"max_header", (*int64)(&l.MaxHeader), (*int64)(&d.MaxHeader), true, 1 << 10, "at least 1KiB, room for a request line"},
		{"read_header_timeout", (*int64)(&l.ReadHeaderTimeout), (*int64)(&d.ReadHeaderTimeout), false, 0, ""},
		{"read_timeout", (*int64)(&l.ReadTimeout), (*int64)(&d.ReadTimeout), false, 0, ""},
		{"idle_timeout", (*int64)(&l.IdleTimeout), (*int64)(&d.IdleTimeout), false, 0, ""},
	} {
		key := "deploy.http_limits." + f.key
		if !s.written(key) {
			*f.v = *f.def
			continue
		}
		if f.isSize && *f.v < f.minimum {
			return s.Errorf(key, "must be %s, got %s", f.minReason, ByteSize(*f.v))
		}
	}
	return nil
}

// unwritten reports whether the spec surely gives key no value, a key
// into a list ("load.stages[1].duration") too; a key it cannot follow
// counts as written.
func (s *Spec) unwritten(key string) bool {
	if key == "" {
		return false
	}
	if !strings.Contains(key, "[") {
		return !s.written(key)
	}
	parts, err := splitParts(key)
	if err != nil {
		return false
	}
	var cur any = s.tree
	for _, p := range parts {
		name, idx, _ := strings.Cut(p, "[")
		if name != "" {
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if cur, ok = m[name]; !ok {
				return true
			}
		}
		for idx != "" {
			n, rest, ok := strings.Cut(idx, "]")
			i, err := strconv.Atoi(n)
			list, isList := cur.([]any)
			if !ok || err != nil || !isList || i < 0 {
				return false
			}
			if i >= len(list) {
				return true
			}
			cur, idx = list[i], strings.TrimPrefix(rest, "[")
		}
	}
	return false
}

// written reports whether the spec gives key a value, even an empty one,
// as opposed to leaving it to its default.
func (s *Spec) written(key string) bool {
	_, ok := s.Lookup(key)
	return ok
}

// Written reports whether the spec gives key a value, even an empty one
// or a zero, as opposed to leaving it to its default: what an owner of a
// table needs to fill a default without taking "0" for "left out".
func (s *Spec) Written(key string) bool { return s.written(key) }

// DeployerTables are the tables of [deploy] that belong to deployers
// rather than to this package: the external deployer's
// [deploy.external], the kube deployer's [deploy.kube], the hosts a
// deployer places groups on, and the netns deployer's links.
// This package checks only that each is a table; its owner decodes it
// with Decode and reports its mistakes with Errorf, as apps do [app].
var DeployerTables = []string{"external", "hosts", "kube", "link", "links"}

// Decode decodes table into v, which must be a pointer to a struct with
// toml tags (or to a map of such structs, for a table of named tables): a top-level table ("app", "deploy", "load" or
// "experiment") or one inside it, as a dotted key ("deploy.kube"). Keys v
// has no field for are errors, as are values of the wrong type; both
// name the key and line. For "app", the key name is left out, as
// App.Name holds it; for "deploy", the DeployerTables, which their
// owners decode.
func (s *Spec) Decode(table string, v any) error {
	raw, written := s.Lookup(table)
	t, ok := raw.(map[string]any)
	if written && !ok {
		return s.Errorf(table, "must be a table, got %s", Echo(raw))
	}
	switch table {
	case "app":
		t = maps.Clone(t)
		delete(t, "name")
	case "deploy":
		t = maps.Clone(t)
		for _, name := range DeployerTables {
			if sub, ok := t[name]; ok {
				if _, isTable := sub.(map[string]any); !isTable {
					return s.Errorf("deploy."+name, "must be a table, got %s", Echo(sub))
				}
				delete(t, name)
			}
		}
	}
	if len(t) == 0 {
		return nil
	}
	var checkErr error
	if rt := reflect.TypeOf(v); rt != nil {
		t, checkErr = s.checkKeys(table, t, rt)
	}
	if len(t) == 0 {
		return checkErr
	}
	buf, err := toml.Marshal(t)
	if err != nil {
		return Join(checkErr, &Error{File: s.Path, Key: table, Line: s.Line(table), Err: fmt.Errorf("re-encode: %w", err)})
	}
	dec := toml.NewDecoder(bytes.NewReader(buf))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Join(checkErr, s.decodeError(table, err, v))
	}
	return checkErr
}

// checkKeys checks each key of table t against rt, the type it decodes
// into, and returns t without its mistakes, at whatever depth they lie,
// and the mistakes. Decode decodes the rest, so that v holds every value
// that is right and the defaults for the others: a caller can go on to
// check the values (an app's Validate) and report their mistakes in the
// same pass (see Errors.AddLater).
func (s *Spec) checkKeys(table string, t map[string]any, rt reflect.Type) (map[string]any, error) {
	c := checker{s: s}
	out := make(map[string]any, len(t))
	for _, k := range c.keysInFileOrder(table, t) {
		kept, _ := c.check(table, map[string]any{k: t[k]}, rt)
		if m, ok := kept.(map[string]any); ok {
			maps.Copy(out, m)
		}
	}
	return out, c.err()
}

// decodeError turns a go-toml error into an *Error. Keys from go-toml are
// relative to the decoded table; prefix makes them absolute.
func (s *Spec) decodeError(prefix string, err error, target any) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		var errs []error
		for i := range strict.Errors {
			rel := strict.Errors[i].Key()
			if len(rel) == 0 {
				errs = append(errs, s.Errorf(prefix, "unknown key"))
				continue
			}
			errs = append(errs, s.unknownKey(s.absKey(prefix, rel[:len(rel)-1]), rel[len(rel)-1], knownKeys(target, rel[:len(rel)-1])))
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		key := s.absKey(prefix, de.Key())
		return s.Errorf(key, "%s", msg)
	}
	// Errors from UnmarshalText come without a key; find the key by value
	// is not possible, so name the table.
	return s.Errorf(prefix, "%v", err)
}

// unknownKey is the error about name, a key that table does not have,
// known being the keys it has. A key that a factor put there, and the
// file does not write, is named by the factor's key, as the file writes
// it, with the key it likely meant in full: the user wrote
// experiment.factors."load.rat", and neither load.rat nor rate.
func (s *Spec) unknownKey(table, name string, known []string) *Error {
	key := table + "." + quoteKeyPart(name)
	set, factor := s.factorSetting(key)
	if factor == "" {
		line, flag := s.where(key)
		return &Error{File: s.Path, Line: line, Key: key, Flag: flag, Err: fmt.Errorf("unknown key%s", didYouMean(name, known))}
	}
	// What the factor sets beyond the unknown key (its .method, when
	// the unknown key is load.requst) stays in the key it meant.
	rest := ""
	if under(set, key) {
		rest = set[len(key):]
	}
	what := "unknown key"
	if set != key {
		what += " " + key
	}
	hint := ""
	if best := closest(name, known); best != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", table+"."+quoteKeyPart(best)+rest)
	} else if len(known) > 0 && len(known) <= 12 {
		hint = fmt.Sprintf(" (the keys of %s: %s)", table, strings.Join(known, ", "))
	}
	line, flag := s.where(factor)
	return &Error{File: s.Path, Line: line, Key: factor, Flag: flag, Err: errors.New(what + hint), about: key}
}

// factorSetting finds the factor that put key in the spec, when the file
// does not write it: the factor that set key itself or a table around
// it, or else one that set a key inside it (load.requst.method puts
// load.requst there). set is the key the factor sets, factor its key;
// both are empty when no factor did.
func (s *Spec) factorSetting(key string) (set, factor string) {
	for k := key; k != ""; k = parentKey(k) {
		if f, ok := s.setBy[k]; ok {
			return k, f
		}
	}
	if _, written := s.index.lines[key]; written {
		return "", ""
	}
	for _, k := range slices.Sorted(maps.Keys(s.setBy)) {
		if under(k, key) {
			return k, s.setBy[k]
		}
	}
	return "", ""
}

// syntaxError locates an error in the file's TOML syntax; go-toml's line
// is right for it. go-toml names an unexpected byte as if it were a
// Latin-1 character ('Ã' for the first byte of 'é'), so a non-ASCII
// character is named as typed instead, with the hint a bare key needs.
func (s *Spec) syntaxError(doc []byte, err error) error {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return &Error{File: s.Path, Err: err}
	}
	line, col := de.Position()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	if r, word := runeAt(doc, line, col); r >= utf8.RuneSelf && r != utf8.RuneError {
		msg = byteRuneRE.ReplaceAllLiteralString(msg, fmt.Sprintf("%#U", r))
		if strings.Contains(msg, "key") {
			msg += fmt.Sprintf(" (a bare key is ASCII letters, digits, '_' and '-'; quote any other: %q)", word)
		}
	}
	return &Error{File: s.Path, Line: max(0, line-s.lineShift), Key: keyOnLine(doc, line, de.Key()), Err: errors.New(msg)}
}

// keyOnLine makes go-toml's key for a syntax error, which is relative to
// its table (`rate` for a second `rate` in [load]), absolute: the longest
// key written on that line, when it ends with go-toml's.
func keyOnLine(doc []byte, line int, rel toml.Key) string {
	if len(rel) == 0 {
		return ""
	}
	parts := make([]string, len(rel))
	for i, p := range rel {
		parts[i] = quoteKeyPart(p)
	}
	tail := strings.Join(parts, ".")
	if k := indexKeys(doc).onLine[line]; strings.HasSuffix(k, "."+tail) {
		return k
	}
	return tail
}

// byteRuneRE matches go-toml's %#U rendering of a single byte.
var byteRuneRE = regexp.MustCompile(`U\+00[89A-F][0-9A-F] '[^']*'`)

// runeAt returns the character at a 1-based line and byte column of doc,
// and the word around it: the run of characters that are not space,
// '=', '.', quotes or brackets.
func runeAt(doc []byte, line, col int) (rune, string) {
	start := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(doc[start:], '\n')
		if i < 0 {
			return utf8.RuneError, ""
		}
		start += i + 1
	}
	end := bytes.IndexByte(doc[start:], '\n')
	if end < 0 {
		end = len(doc) - start
	}
	text := string(doc[start : start+end])
	at := col - 1
	if at < 0 || at >= len(text) {
		return utf8.RuneError, ""
	}
	r, _ := utf8.DecodeRuneInString(text[at:])
	isSep := func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("=.\"'[]", r) }
	from := strings.LastIndexFunc(text[:at], isSep) + 1
	to := strings.IndexFunc(text[at:], isSep)
	if to < 0 {
		to = len(text) - at
	}
	return r, text[from : at+to]
}

func (s *Spec) absKey(prefix string, k toml.Key) string {
	parts := make([]string, 0, len(k)+1)
	if prefix != "" {
		parts = append(parts, prefix)
	}
	for _, p := range k {
		parts = append(parts, quoteKeyPart(p))
	}
	return strings.Join(parts, ".")
}

// Errorf returns an *Error about key, located at the line the key is
// written on (or the line of the factor or the --set flag that set it, or
// of its nearest written parent).
func (s *Spec) Errorf(key, format string, args ...any) error {
	line, flag := s.where(key)
	return &Error{File: s.Path, Line: line, Key: key, Flag: flag, Err: fmt.Errorf(format, args...), unwritten: s.unwritten(key)}
}

// NameErrorf is Errorf for a mistake in the table at key as a whole (its
// name is no group of the placement; the deployer has no such table),
// not in what it holds: a later check's error of this kind is kept
// though a key inside the table was found wrong before it
// (Errors.AddLater), as that key does not make it.
func (s *Spec) NameErrorf(key, format string, args ...any) error {
	err := s.Errorf(key, format, args...)
	err.(*Error).ofName = true
	return err
}

// Line returns the line key is written on, falling back to the factor that
// set it and then to its nearest parent; 0 if none is written or a --set
// flag set it.
func (s *Spec) Line(key string) int {
	line, _ := s.where(key)
	return line
}

// Origin says where key's value comes from, for a message about another
// key that it conflicts with: " (line N)" or " (by --set k=v)"; empty when
// it is nowhere written.
func (s *Spec) Origin(key string) string {
	switch line, flag := s.where(key); {
	case flag != "":
		return " (by " + flag + ")"
	case line > 0:
		return fmt.Sprintf(" (line %d)", line)
	}
	return ""
}

// where locates key: when a factor level or a --set flag replaced the key
// or one of its parents, the nearest of those decides, as the file no
// longer holds the value; otherwise the line of the key or of its nearest
// written parent.
func (s *Spec) where(key string) (line int, flag string) {
	for k := key; k != ""; k = parentKey(k) {
		if factor, ok := s.setBy[k]; ok {
			return s.where(factor)
		}
		if f, ok := s.setByFlag[k]; ok {
			return 0, f
		}
	}
	for k := key; k != ""; k = parentKey(k) {
		if l, ok := s.index.lines[k]; ok {
			return max(0, l-s.lineShift), ""
		}
	}
	return 0, ""
}

func parentKey(k string) string {
	if i := strings.LastIndexAny(k, ".["); i > 0 {
		return k[:i]
	}
	return ""
}

// Lookup returns the value at a dotted path in the spec as written (or as
// set by a factor level), and whether it is present. A part holding a dot
// is double-quoted, as errors name it (deploy.links."a.b").
func (s *Spec) Lookup(path string) (any, bool) {
	parts, err := splitParts(path)
	if err != nil {
		return nil, false
	}
	var cur any = s.tree
	for _, p := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// Tree returns a deep copy of the spec's tables, with any factor levels
// applied: the effective spec of a run, as written to the result store.
func (s *Spec) Tree() map[string]any {
	return deepCopy(s.tree).(map[string]any)
}

// With returns the spec with each dotted path in levels set to its value, as
// the effective spec of one run. Every path must name a key of [app],
// [deploy] or [load]; errors point at the line of the factor in
// [experiment.factors]. Decoding into the caller's structs (Decode) then
// reports values that do not fit. When the point's [deploy] is wrong,
// With returns its spec with the error, as Parse does, fit only for
// checking its other tables in the same pass.
func (s *Spec) With(levels map[string]any) (*Spec, error) {
	// Levels change only [app], [deploy] and [load]; the rest is shared,
	// as nothing changes a spec's tree in place (Set replaces it).
	tree := maps.Clone(s.tree)
	for _, t := range []string{"app", "deploy", "load"} {
		if v, ok := tree[t]; ok {
			tree[t] = deepCopy(v)
		}
	}
	setBy := maps.Clone(s.setBy)
	levels, at := s.Experiment.assignments(levels)
	paths := slices.Sorted(maps.Keys(levels))
	for _, path := range paths {
		factorKey := at[path]
		// A factor's name is a dotted key as --set takes it, so a part
		// holding a dot is double-quoted:
		// 'deploy.kube.node_selector."kubernetes.io/hostname"'.
		parts, err := splitKey(path)
		if err != nil {
			return nil, s.Errorf(factorKey, "a factor must be a key of [app], [deploy] or [load], written as a dotted path such as \"deploy.transport\" (a part with a dot in double quotes: 'deploy.kube.node_selector.\"kubernetes.io/hostname\"'): %w", err)
		}
		if !slices.Contains([]string{"app", "deploy", "load"}, parts[0]) {
			return nil, s.Errorf(factorKey, "a factor must be a key of [app], [deploy] or [load], written as a dotted path such as \"deploy.transport\"")
		}
		if err := setPath(tree, parts, deepCopy(levels[path])); err != nil {
			return nil, s.Errorf(factorKey, "%w", err)
		}
		// Errors about the value point where the factor was written (or
		// name the --set flag that wrote it); they name the key as the
		// checker does, each part quoted if need be.
		setBy[s.absKey("", parts)] = factorKey
	}
	out := &Spec{Path: s.Path, Source: s.Source, Overrides: s.Overrides, tree: tree, index: s.index, setBy: setBy, setByFlag: s.setByFlag, lineShift: s.lineShift,
		Experiment: s.Experiment, designUnknown: s.designUnknown}
	if err := out.decodeDeploy(); err != nil {
		// As Parse does: the point's other tables can be checked in the
		// same pass.
		return out, err
	}
	return out, nil
}

// setPath sets tree[parts[0]][parts[1]]... to value, making the tables on
// the way that are missing.
func setPath(tree map[string]any, parts []string, value any) error {
	m := tree
	for i, p := range parts[:len(parts)-1] {
		next, ok := m[p]
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		nm, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not a table", strings.Join(parts[:i+1], "."))
		}
		m = nm
	}
	m[parts[len(parts)-1]] = value
	return nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}
