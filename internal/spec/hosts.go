package spec

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Host is one [deploy.hosts.<name>] table: an emulated machine that the
// netns deployer makes a network namespace of its own.
type Host struct {
	// Groups names the groups of the chosen placement that run on the
	// host, each as the placement names it ("cart+checkout").
	Groups []string `toml:"groups"`
	// CPUs is how many cores the host reserves (a cpuset); 0 leaves the
	// host unconfined.
	CPUs int `toml:"cpus"`
	// Memory is the host's memory budget; 0 for none.
	Memory ByteSize `toml:"memory"`
	// Exclusive keeps the host's cores its own: no other host's CPU set
	// may overlap it (cpuset.cpu_exclusive's meaning).
	Exclusive bool `toml:"exclusive"`
}

// Link is [deploy.link] (every pair of hosts) or one [deploy.links."a-b"]
// (the pair a, b, in either order: a pair has one link, so "b-a" beside
// "a-b" is an error). A key a links table leaves out is taken from
// [deploy.link].
type Link struct {
	// Latency is the round trip the link adds.
	Latency Duration `toml:"latency"`
	// Jitter spreads Latency uniformly by ± Jitter/2 in each direction.
	Jitter Duration `toml:"jitter"`
	// Bandwidth limits each direction; 0 for none.
	Bandwidth Bandwidth `toml:"bandwidth"`
	// Loss is the fraction of segments the link loses, in [0, 1).
	Loss float64 `toml:"loss"`
}

// Shaped reports whether the link changes anything about the traffic on it.
func (l Link) Shaped() bool {
	return l.Latency > 0 || l.Jitter > 0 || l.Bandwidth > 0 || l.Loss > 0
}

// LinkKeys are the keys of a link table, for merging and error messages.
var LinkKeys = []string{"latency", "jitter", "bandwidth", "loss"}

// LinkBetween is the link between hosts a and b: [deploy.link] with the
// keys of [deploy.links."a-b"] (or "b-a") written over it.
func (s *Spec) LinkBetween(a, b string) Link {
	l := s.Deploy.Link
	for _, name := range []string{a + "-" + b, b + "-" + a} {
		o, ok := s.Deploy.Links[name]
		if !ok {
			continue
		}
		prefix := "deploy.links." + quoteKeyPart(name) + "."
		if s.written(prefix + "latency") {
			l.Latency = o.Latency
		}
		if s.written(prefix + "jitter") {
			l.Jitter = o.Jitter
		}
		if s.written(prefix + "bandwidth") {
			l.Bandwidth = o.Bandwidth
		}
		if s.written(prefix + "loss") {
			l.Loss = o.Loss
		}
	}
	return l
}

// checkLinkPairs refuses a pair named twice ("vm1-vm2" and "vm2-vm1"):
// both would apply, one over the other, and the link would be what the
// later table wrote in one direction of lookup and the earlier in the
// other. The second key in file order is the mistake. A name that is no
// pair is left to the deployer, which knows the hosts.
func (s *Spec) checkLinkPairs() error {
	raw, _ := s.Lookup("deploy.links")
	links, _ := raw.(map[string]any)
	first := map[string]string{} // unordered pair → the key that named it
	for _, name := range s.orderedChildren("deploy.links", links) {
		a, b, ok := strings.Cut(name, "-")
		if !ok {
			continue
		}
		pair := min(a, b) + "-" + max(a, b)
		prev, dup := first[pair]
		if !dup {
			first[pair] = name
			continue
		}
		line, flag := s.where(s.tableKey(LinkKey(prev, ""), links[prev]))
		where := "at line " + strconv.Itoa(line)
		if flag != "" {
			where = "by " + flag
		}
		return s.Errorf(s.tableKey(LinkKey(name, ""), links[name]), "the pair %s is already set %s; a link joins a pair whichever host is named first, so write its keys in one table", prev, where)
	}
	return nil
}

// tableKey is the key to locate table (written at key) by: key itself when
// the file, a factor or a flag wrote it (or a table holding it), else its
// first key in file order, as `--set deploy.links."a-b".latency=...`
// writes only that key.
func (s *Spec) tableKey(key string, table any) string {
	if _, ok := s.index.lines[key]; ok {
		return key
	}
	for k := key; k != ""; k = parentKey(k) {
		if _, ok := s.setBy[k]; ok {
			return key
		}
		if _, ok := s.setByFlag[k]; ok {
			return key
		}
	}
	m, _ := table.(map[string]any)
	if keys := s.orderedChildren(key, m); len(keys) > 0 {
		return key + "." + quoteKeyPart(keys[0])
	}
	return key
}

// hostTables are the tables that place groups on emulated hosts and shape
// the links between them: what a deployer that has no hosts cannot honour.
var hostTables = []string{"deploy.hosts", "deploy.link", "deploy.links"}

// HostTableKey returns the first of hostTables' tables (one host's, one
// pair's) the spec writes, in file order, as the key to report it at; ok
// is false when it writes none. A table set by a flag alone comes after
// those in the file.
func (s *Spec) HostTableKey() (key string, ok bool) {
	var keys []string
	for _, t := range hostTables {
		v, written := s.Lookup(t)
		if !written {
			continue
		}
		m, _ := v.(map[string]any)
		if t == "deploy.link" || len(m) == 0 {
			keys = append(keys, s.tableKey(t, v))
			continue
		}
		for name, sub := range m {
			keys = append(keys, s.tableKey(t+"."+quoteKeyPart(name), sub))
		}
	}
	if len(keys) == 0 {
		return "", false
	}
	line := func(k string) int {
		if l := s.Line(k); l > 0 {
			return l
		}
		return math.MaxInt
	}
	return slices.MinFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(line(a), line(b)), strings.Compare(a, b))
	}), true
}

// LinkKey is the spec key of a link table's key: "deploy.link.latency", or
// "deploy.links.vm1-vm2.latency" for a pair's override; with key "", the
// table's.
func LinkKey(pair, key string) string {
	k := "deploy.link"
	if pair != "" {
		k = "deploy.links." + quoteKeyPart(pair)
	}
	if key != "" {
		k += "." + key
	}
	return k
}

// HostKey is the spec key of a host table's key, or with key "" the
// table's.
func HostKey(host, key string) string {
	k := "deploy.hosts." + quoteKeyPart(host)
	if key != "" {
		k += "." + key
	}
	return k
}

// Bandwidth is a rate in bits per second, written in TOML as a string with
// tc's units: "100kbit", "10Mbit", "1Gbit" (decimal: 1Mbit = 10^6 bit/s).
type Bandwidth uint64

var bandwidthRE = regexp.MustCompile(`^([0-9]+\.?[0-9]*|\.[0-9]+)\s*([kKmMgGtT]?)bit$`)

// UnmarshalText parses a rate with its unit.
func (b *Bandwidth) UnmarshalText(t []byte) error {
	text := strings.TrimSpace(string(t))
	m := bandwidthRE.FindStringSubmatch(text)
	if m == nil {
		return fmt.Errorf("not a bandwidth (write e.g. \"100Mbit\" or \"1Gbit\", in bits per second): %q", text)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return fmt.Errorf("not a bandwidth: %q: %w", text, err)
	}
	v *= map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[strings.ToLower(m[2])]
	if v >= math.MaxInt64 {
		return fmt.Errorf("too large: %q", text)
	}
	if v > 0 && v < 8 {
		return fmt.Errorf("must be 0 (no limit) or at least 8bit, got %q", text)
	}
	*b = Bandwidth(math.Round(v))
	return nil
}

// MarshalText writes the rate in the largest unit that divides it.
func (b Bandwidth) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

func (b Bandwidth) String() string {
	n := uint64(b)
	for _, u := range []struct {
		s string
		f uint64
	}{{"Tbit", 1e12}, {"Gbit", 1e9}, {"Mbit", 1e6}, {"kbit", 1e3}} {
		if n >= u.f && n%u.f == 0 {
			return strconv.FormatUint(n/u.f, 10) + u.s
		}
	}
	return strconv.FormatUint(n, 10) + "bit"
}
