package runtime_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

func TestResolveFaults(t *testing.T) {
	p, err := loadResolve(t, splitChain+`[deploy.replicas]
hop3 = 2
[deploy.faults.link_cut]
target = "hop2"
start = "2s"
duration = "1s"
every = "4s"
[deploy.faults.kill]
target = "hop3"
start = "3s"
replica = 1
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Faults) != 2 {
		t.Fatalf("faults %+v", p.Faults)
	}
	cut, kill := p.Faults[0], p.Faults[1]
	if cut.Kind != spec.FaultLinkCut || cut.Group != 1 || !cut.Link() || kill.Kind != spec.FaultKill || kill.Group != 2 || kill.Replica != 1 || kill.Link() {
		t.Errorf("faults %+v", p.Faults)
	}
	// In a 10 s measurement, a 1 s cut every 4 s from 2 s: 2–3, 6–7; the
	// third would start at 10 s, the end.
	want := []runtime.Window{{2 * time.Second, 3 * time.Second}, {6 * time.Second, 7 * time.Second}}
	if got := cut.Windows(10 * time.Second); !slices.Equal(got, want) {
		t.Errorf("windows %v, want %v", got, want)
	}
	if got := cut.Windows(6500 * time.Millisecond); !slices.Equal(got, []runtime.Window{{2 * time.Second, 3 * time.Second}, {6 * time.Second, 6500 * time.Millisecond}}) {
		t.Errorf("a window the run's end cuts short: %v", got)
	}
	if got := kill.Windows(10 * time.Second); !slices.Equal(got, []runtime.Window{{3 * time.Second, 3 * time.Second}}) {
		t.Errorf("kill windows %v", got)
	}
	if got := kill.Windows(2 * time.Second); len(got) != 0 {
		t.Errorf("a kill after the run's end: %v", got)
	}
}

func TestResolveFaultErrors(t *testing.T) {
	for _, tt := range []struct{ src, err string }{
		{splitChain + "[deploy.faults.reset]\ntarget = \"hop9\"\nfraction = 0.5\n", "s.toml:6: deploy.faults.reset.target: no group or component \"hop9\" in placement \"split\""},
		{"[app]\nname = \"chain\"\n[deploy]\ntransport = \"inproc\"\n[deploy.faults.link_cut]\ntarget = \"hop2\"\nduration = \"1s\"\n", "s.toml:6: deploy.faults.link_cut.target: transport \"inproc\" has no hop"},
		{splitChain + "[deploy.faults.kill]\ntarget = \"hop2\"\nreplica = 1\n", "s.toml:7: deploy.faults.kill.replica: group hop2 has 1 replica(s)"},
	} {
		if _, err := loadResolve(t, tt.src); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: error %v, want %q", tt.src, err, tt.err)
		}
	}
}
