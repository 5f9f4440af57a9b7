package netns

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/svclab/svclab/internal/spec"
)

// Link is [deploy.link] (every pair of machines) or one [deploy.links."a-b"]
// (the pair a, b, in either order: a pair has one link, so "b-a" beside
// "a-b" is an error). A key a links table leaves out is taken from
// [deploy.link]. These tables are this deployer's alone: the local
// deployer refuses them, the kube deployer leaves them out with a note.
type Link struct {
	// Latency is the round trip the link adds.
	Latency spec.Duration `toml:"latency"`
	// Jitter spreads Latency uniformly by ± Jitter/2 in each direction.
	Jitter spec.Duration `toml:"jitter"`
	// Bandwidth limits each direction; 0 for none.
	Bandwidth Bandwidth `toml:"bandwidth"`
	// Loss is the fraction of segments the link loses, in [0, 1).
	Loss float64 `toml:"loss"`
}

// Shaped reports whether the link changes anything about the traffic on it.
func (l Link) Shaped() bool {
	return l.Latency > 0 || l.Jitter > 0 || l.Bandwidth > 0 || l.Loss > 0
}

// links are a spec's link tables, decoded.
type links struct {
	all   Link            // [deploy.link]
	pairs map[string]Link // [deploy.links], by the name written
	s     *spec.Spec      // which keys a pair's table writes
}

// linksOf decodes [deploy.link] and [deploy.links], and refuses a pair
// named twice ("vm1-vm2" and "vm2-vm1"): both would apply, one over the
// other, and the link would be what the later table wrote in one
// direction of lookup and the earlier in the other. The second key in
// file order is the mistake. A name that is no pair is left to newLayout,
// which knows the hosts.
func linksOf(s *spec.Spec) (*links, error) {
	l := &links{s: s}
	// The tables as far as they decoded, their wrong keys left out, for
	// newLayout to check beside these errors.
	errs := []error{s.Decode("deploy.link", &l.all), s.Decode("deploy.links", &l.pairs)}
	first := map[string]string{} // unordered pair → the key that named it
	for _, name := range s.Children("deploy.links") {
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
		line, flag := s.Where(s.TableKey(linkKey(prev, "")))
		where := "at line " + strconv.Itoa(line)
		if flag != "" {
			where = "by " + flag
		}
		errs = append(errs, s.Errorf(s.TableKey(linkKey(name, "")), "the pair %s is already set %s; a link joins a pair whichever machine is named first, so write its keys in one table", prev, where))
	}
	return l, errors.Join(errs...)
}

// decodeKeys is Traits.DecodeKeys: the link tables' types and pairs,
// checked for every spec, as they were when the spec package read them.
func decodeKeys(s *spec.Spec) error {
	_, err := linksOf(s)
	return err
}

// between is the link between machines a and b: [deploy.link] with the keys
// of [deploy.links."a-b"] (or "b-a") written over it.
func (l *links) between(a, b string) Link {
	out := l.all
	for _, name := range []string{a + "-" + b, b + "-" + a} {
		o, ok := l.pairs[name]
		if !ok {
			continue
		}
		written := func(key string) bool { return l.s.Written(linkKey(name, key)) }
		if written("latency") {
			out.Latency = o.Latency
		}
		if written("jitter") {
			out.Jitter = o.Jitter
		}
		if written("bandwidth") {
			out.Bandwidth = o.Bandwidth
		}
		if written("loss") {
			out.Loss = o.Loss
		}
	}
	return out
}

// linkKey is the spec key of a link table's key: "deploy.link.latency", or
// "deploy.links.vm1-vm2.latency" for a pair's override; with key "", the
// table's.
func linkKey(pair, key string) string {
	parts := []string{"deploy", "link"}
	if pair != "" {
		parts = []string{"deploy", "links", pair}
	}
	if key != "" {
		parts = append(parts, key)
	}
	return spec.KeyOf(parts...)
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
