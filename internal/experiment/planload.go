package experiment

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/spec"
)

// noLoad explains an error in the [load] table of a spec that has none
// and no load.* factor: such a spec (experiments/chain.toml, say)
// describes a deployment for `svclab up`, and the first load key it lacks
// ("load.rate: must be > 0") would not tell the user so. Other errors,
// and errors of a spec that has a [load] table, pass unchanged; so does
// each error err joins.
func noLoad(s *spec.Spec, err error) error {
	parts := spec.Unjoin(err)
	if len(parts) > 1 {
		for i, p := range parts {
			parts[i] = noLoadOne(s, p)
		}
		return spec.Join(parts...)
	}
	return noLoadOne(s, err)
}

func noLoadOne(s *spec.Spec, err error) error {
	var se *spec.Error
	if !errors.As(err, &se) || (se.Key != "load" && !strings.HasPrefix(se.Key, "load.")) {
		return err
	}
	if t, ok := s.Lookup("load"); ok {
		if s.Line("load") > 0 {
			return err
		}
		// The file has no [load]: --set flags made one, and the error is
		// about a key they did not give.
		var given []string
		if m, ok := t.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				given = append(given, "load."+k)
			}
		}
		return fmt.Errorf("%w (the spec has no [load] table and --set gave only %s: give the rest with --set, e.g. --set load.rate=100, or add a [load] table, docs/LOAD.md)", err, strings.Join(given, ", "))
	}
	for _, f := range s.Experiment.Factors {
		if strings.HasPrefix(f.Name, "load.") {
			return err
		}
	}
	return &spec.Error{File: s.Path, Err: errors.New("the spec has no [load] table, so it can be deployed (svclab up " + s.Path + ") but not run or planned; add a [load] table (docs/LOAD.md), or give one with --set load.rate=100 --set load.duration=10s")}
}

// CheckRemote refuses a spec whose load would go to another machine: a
// load.target, or a key a deployer names where the load goes
// (deploy.Traits.Targets: the external deployer's url), as written or,
// when the design is expanded, as a factor sets it, that
// load.CheckLoopback does not take. Every command that sends load asks
// it before anything starts, unless the user passed --allow-remote, as
// `svclab load` does: load aimed at someone else's service is an attack.
func CheckRemote(s *spec.Spec, expanded bool) error {
	var es spec.Errors
	for _, key := range targetKeys() {
		covered := false
		for _, f := range s.Experiment.Factors {
			if !expanded {
				break
			}
			for li, l := range f.Levels {
				// A factor over the key, or over a table that holds it
				// ("load"), sets it in every level; a linked factor's
				// level may set it among other keys.
				for k, v := range f.Assignments(l) {
					rest, ok := strings.CutPrefix(key, k)
					if !ok || (rest != "" && rest[0] != '.') {
						continue
					}
					covered = true
					at := spec.FactorKey(f.Name)
					if f.Linked() {
						at = fmt.Sprintf("%s[%d].%q", at, li, k)
					}
					if t, ok := within(v, rest).(string); ok && t != "" {
						es.Add(remoteError(s, at, t))
					}
				}
			}
		}
		if t, ok := s.Lookup(key); ok && !covered {
			if t, ok := t.(string); ok && t != "" {
				es.Add(remoteError(s, key, t))
			}
		}
	}
	return es.Err()
}

// targetKeys are the keys whose values are where load goes: load.target
// and every registered deployer's Targets.
func targetKeys() []string {
	keys := []string{"load.target"}
	for _, name := range deploy.Names() {
		d, _ := deploy.Lookup(name)
		keys = append(keys, d.Traits().Targets...)
	}
	return keys
}

// within is the value at the dotted path rest (".target") inside v, a
// level of a factor over a table; v itself for "".
func within(v any, rest string) any {
	for _, part := range strings.Split(strings.TrimPrefix(rest, "."), ".") {
		if part == "" {
			break
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

func remoteError(s *spec.Spec, key, target string) error {
	if err := load.CheckLoopback(target); err != nil {
		return s.Errorf(key, "%v; pass --allow-remote to load it anyway", err)
	}
	return nil
}
