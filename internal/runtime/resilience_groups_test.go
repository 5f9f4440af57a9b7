package runtime_test

import (
	"strings"
	"testing"
	"time"
)

// TestResilienceGroupsProto resolves per-group policies and checks what
// the hosts get: a group's policy under each of its components' names, a
// component's own table over its group's, and the hop-wide policy for
// every other peer.
func TestResilienceGroupsProto(t *testing.T) {
	p, err := loadResolve(t, `[app]
name = "chain"
hops = 4
[deploy]
placement = "p"
[deploy.placements]
p = [["hop1"], ["hop2", "hop3"], ["hop4"]]
[deploy.resilience]
retries = 2
timeout = "1s"
[deploy.resilience.groups."hop2+hop3"]
retries = 0
[deploy.resilience.groups.hop3]
timeout = "100ms"
`)
	if err != nil {
		t.Fatal(err)
	}
	r := p.ResilienceProto()
	if r.GetRetries() != 2 || r.GetTimeout().AsDuration() != time.Second {
		t.Errorf("hop-wide policy %v", r)
	}
	if len(r.GetPeers()) != 2 {
		t.Fatalf("peers %v, want hop2 and hop3", r.GetPeers())
	}
	hop2, hop3 := r.GetPeers()["hop2"], r.GetPeers()["hop3"]
	if hop2.GetRetries() != 0 || hop2.GetTimeout().AsDuration() != time.Second {
		t.Errorf("hop2 (its group's policy): %v", hop2)
	}
	if hop3.GetRetries() != 2 || hop3.GetTimeout().AsDuration() != 100*time.Millisecond {
		t.Errorf("hop3 (its own table, inheriting the hop-wide retries): %v", hop3)
	}
	if _, ok := r.GetPeers()["hop4"]; ok {
		t.Error("hop4 has a policy of its own")
	}
	none, err := loadResolve(t, splitChain)
	if err != nil {
		t.Fatal(err)
	}
	if none.ResilienceProto() != nil {
		t.Error("no deploy.resilience: a policy")
	}
}

func TestResilienceGroupResolveErrors(t *testing.T) {
	for _, tt := range []struct{ src, err string }{
		{splitChain + "[deploy.resilience.groups.hop9]\nretries = 1\n", "s.toml:5: deploy.resilience.groups.hop9: no group or component \"hop9\" in placement \"split\""},
		{"[app]\nname = \"chain\"\n[deploy]\ntransport = \"inproc\"\n[deploy.resilience.groups.hop2]\nretries = 1\n", "deploy.resilience.groups.hop2: transport \"inproc\" has no hop"},
	} {
		if _, err := loadResolve(t, tt.src); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.err)
		}
	}
}
