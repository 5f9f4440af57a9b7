package spec

import (
	"testing"
	"time"
)

func TestBandwidth(t *testing.T) {
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
	s, err := Parse("spec.toml", []byte(`[app]
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
	for _, tc := range []struct {
		a, b string
		want Link
	}{
		// An override replaces the keys it writes, in either order of the pair.
		{"a", "b", Link{Latency: Duration(10 * time.Millisecond), Jitter: Duration(500 * time.Microsecond), Loss: 0.01}},
		{"b", "a", Link{Latency: Duration(10 * time.Millisecond), Jitter: Duration(500 * time.Microsecond), Loss: 0.01}},
		// A key written as its zero value is written.
		{"c", "a", Link{Latency: Duration(time.Millisecond), Jitter: Duration(500 * time.Microsecond)}},
		{"b", "c", Link{Latency: Duration(time.Millisecond), Jitter: Duration(500 * time.Microsecond), Loss: 0.01}},
	} {
		if got := s.LinkBetween(tc.a, tc.b); got != tc.want {
			t.Errorf("%s-%s: got %+v, want %+v", tc.a, tc.b, got, tc.want)
		}
	}
}
