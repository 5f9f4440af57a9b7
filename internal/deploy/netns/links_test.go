package netns

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/spec"
)

func TestBandwidthText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Bandwidth
		err  bool
	}{
		{"1Gbit", 1_000_000_000, false},
		{"54Mbit", 54_000_000, false},
		{"1.5Mbit", 1_500_000, false},
		{"100kbit", 100_000, false},
		{"0bit", 0, false},
		{"800bit", 800, false},
		{"4bit", 0, true},
		{"1G", 0, true},
		{"100", 0, true},
		{"fast", 0, true},
	} {
		var b Bandwidth
		err := b.UnmarshalText([]byte(tc.in))
		if (err != nil) != tc.err || (!tc.err && b != tc.want) {
			t.Errorf("%q: got %d, %v; want %d (error %v)", tc.in, b, err, tc.want, tc.err)
		}
		if !tc.err {
			out, _ := b.MarshalText()
			var back Bandwidth
			if err := back.UnmarshalText(out); err != nil || back != b {
				t.Errorf("%q: %q reads back as %d, %v", tc.in, out, back, err)
			}
		}
	}
}

func TestLinkBetween(t *testing.T) {
	s, err := spec.Parse("spec.toml", []byte(`[app]
name = "chain"
[deploy.link]
latency = "1ms"
jitter = "0.5ms"
loss = 0.01
[deploy.links."b-a"]
latency = "10ms"
[deploy.links."a-c"]
loss = 0.0
`))
	if err != nil {
		t.Fatal(err)
	}
	l, err := linksOf(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b string
		want Link
	}{
		// An override replaces the keys it writes, in either order of the pair.
		{"a", "b", Link{Latency: spec.Duration(10 * time.Millisecond), Jitter: spec.Duration(500 * time.Microsecond), Loss: 0.01}},
		{"b", "a", Link{Latency: spec.Duration(10 * time.Millisecond), Jitter: spec.Duration(500 * time.Microsecond), Loss: 0.01}},
		// A key written as its zero value is written.
		{"c", "a", Link{Latency: spec.Duration(time.Millisecond), Jitter: spec.Duration(500 * time.Microsecond)}},
		{"b", "c", Link{Latency: spec.Duration(time.Millisecond), Jitter: spec.Duration(500 * time.Microsecond), Loss: 0.01}},
	} {
		if got := l.between(tc.a, tc.b); got != tc.want {
			t.Errorf("%s-%s: got %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestLinkPairNamedTwice(t *testing.T) {
	const head = "[app]\nname = \"chain\"\n"
	for _, tc := range []struct {
		name string
		src  string
		sets []string
		want string // "" for no error
	}{
		{"reversed pair", head + "[deploy.links.\"vm1-vm2\"]\nlatency = \"1ms\"\n[deploy.links.\"vm2-vm1\"]\nlatency = \"9ms\"\n", nil,
			`x.toml:5: deploy.links.vm2-vm1: the pair vm1-vm2 is already set at line 3;`},
		{"client pair reversed", head + "[deploy.links.\"vm1-client\"]\nloss = 0.1\n[deploy.links.\"client-vm1\"]\nloss = 0.2\n", nil,
			`x.toml:5: deploy.links.client-vm1: the pair vm1-client is already set at line 3;`},
		{"by a flag", head + "[deploy.links.\"vm1-vm2\"]\nlatency = \"1ms\"\n", []string{`deploy.links."vm2-vm1".latency="2ms"`},
			`--set deploy.links."vm2-vm1".latency="2ms": deploy.links.vm2-vm1.latency: the pair vm1-vm2 is already set at line 3;`},
		{"by a flag under [deploy]", head + "[deploy]\ntransport = \"grpc\"\n[deploy.links.\"vm1-vm2\"]\nlatency = \"1ms\"\n", []string{`deploy.links."vm2-vm1".latency="2ms"`},
			`--set deploy.links."vm2-vm1".latency="2ms": deploy.links.vm2-vm1.latency: the pair vm1-vm2 is already set at line 5;`},
		{"distinct pairs", head + "[deploy.links.\"vm1-vm2\"]\nlatency = \"1ms\"\n[deploy.links.\"vm2-vm3\"]\nlatency = \"9ms\"\n[deploy.links.\"vm3-vm1\"]\nloss = 0.1\n", nil, ""},
		// Not a pair at all: the deployer, which knows the machines, says so.
		{"no pair", head + "[deploy.links.vm1]\nlatency = \"1ms\"\n[deploy.links.vm2]\nlatency = \"1ms\"\n", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("x.toml", []byte(tc.src), tc.sets...)
			if err == nil {
				_, err = linksOf(s)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error\n got %v\nwant prefix %q", err, tc.want)
			}
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Errorf("error %T is not a *spec.Error", err)
			}
		})
	}
}

// A factor level that names a pair already in the file is refused at the
// factor's line, for the design point that has it.
func TestLinkPairNamedTwiceByFactor(t *testing.T) {
	s, err := spec.Parse("x.toml", []byte("[app]\nname = \"chain\"\n[deploy.links.\"vm1-vm2\"]\nlatency = \"1ms\"\n[experiment.factors]\n\"deploy.links.vm2-vm1\" = [{latency = \"2ms\"}, {latency = \"3ms\"}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.With(map[string]any{"deploy.links.vm2-vm1": map[string]any{"latency": "2ms"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = linksOf(r)
	want := "x.toml:6: deploy.links.vm2-vm1: the pair vm1-vm2 is already set at line 3;"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error\n got %v\nwant prefix %q", err, want)
	}
}
