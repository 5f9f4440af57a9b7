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
		{splitChain + "[deploy.faults.kill]\ntarget = \"hop2\"\nreplica = 1\n", "s.toml:7: deploy.faults.kill.replica: group hop2 has 1 replica,"},
		// The values alone, checked here too: one feature, one place.
		{splitChain + "[deploy.faults.link_cut]\ntarget = \"hop2\"\nstart = \"1s\"\n", "s.toml:5: deploy.faults.link_cut.duration: must be positive"},
		{splitChain + "[deploy.faults.reset]\n\nfraction = 0.5\n", "s.toml:5: deploy.faults.reset: needs target"},
		{splitChain + "[deploy.faults.reset]\ntarget = \"hop2\"\nfraction = 1.5\n", "s.toml:7: deploy.faults.reset.fraction: must be a fraction above 0 and at most 1, got 1.5"},
		{splitChain + "[deploy.faults.reset]\ntarget = \"hop2\"\nfraction = 0.0\n", "s.toml:7: deploy.faults.reset.fraction"},
		{splitChain + "[deploy.faults.latency_spike]\ntarget = \"hop2\"\ndelay = \"5ms\"\nduration = \"2s\"\nevery = \"2s\"\n", "s.toml:9: deploy.faults.latency_spike.every: must be longer than duration"},
		{splitChain + "[deploy.faults.latency_spike]\ntarget = \"hop2\"\ndelay = \"500us\"\n", "s.toml:7: deploy.faults.latency_spike.delay: must be at least 1ms"},
		{splitChain + "[deploy.faults.kill]\ntarget = \"hop2\"\nreplica = -1\n", "s.toml:7: deploy.faults.kill.replica: must be a replica's ordinal"},
		// Found at the run's first window before: the entry's hop is the
		// load's, which no fault proxy sits on, and unix sockets have none.
		{splitChain + "[deploy.faults.reset]\ntarget = \"hop1\"\nfraction = 0.5\n", "s.toml:6: deploy.faults.reset.target: no other group calls group hop1, so its hop carries nothing to fault"},
		{"[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\nnetwork = \"unix\"\n[deploy.faults.reset]\ntarget = \"hop2\"\nfraction = 0.5\n", "s.toml:7: deploy.faults.reset.target: the hop into group hop2 is on network \"unix\"; faults act on tcp hops"},
		// Every mistake of the table at once.
		{splitChain + "[deploy.faults.reset]\ntarget = \"hop2\"\nfraction = 1.5\n[deploy.faults.kill]\ntarget = \"hop9\"\n",
			"s.toml:7: deploy.faults.reset.fraction: must be a fraction above 0 and at most 1, got 1.5\ns.toml:9: deploy.faults.kill.target: no group or component \"hop9\""},
	} {
		_, err := loadResolve(t, tt.src)
		for _, want := range strings.Split(tt.err, "\n") { // one error a line
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: error %v, want %q", tt.src, err, want)
			}
		}
	}
}

// A latency spike without probability acts on every connection, and a
// factor's level of a fault is checked at the factor's line.
func TestResolveFaultDefaultsAndLevels(t *testing.T) {
	p, err := loadResolve(t, splitChain+"[deploy.faults.latency_spike]\ntarget = \"hop3\"\ndelay = \"5ms\"\n")
	if err != nil || len(p.Faults) != 1 || p.Faults[0].Fraction != 1 || p.Faults[0].Group != 2 {
		t.Fatalf("faults %+v, %v; want a spike on hop3 with probability 1", p.Faults, err)
	}
	s, err := spec.Parse("x.toml", []byte(splitChain+"[deploy.faults.reset]\ntarget = \"hop2\"\nfraction = 0.1\n[experiment.factors]\n\"deploy.faults.reset.fraction\" = [0.1, 2.0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.With(map[string]any{"deploy.faults.reset.fraction": 2.0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Resolve(r); err == nil || !strings.HasPrefix(err.Error(), "x.toml:9: deploy.faults.reset.fraction: must be a fraction") {
		t.Errorf("level 2.0: %v", err)
	}
}

// TestCheckFaultTimes: faults are timed from the measurement's start, so
// one that starts at or past its end never acts and is refused at its
// start, every such fault at once.
func TestCheckFaultTimes(t *testing.T) {
	p, err := loadResolve(t, splitChain+"[deploy.faults.link_cut]\ntarget = \"hop2\"\nstart = \"30s\"\nduration = \"1s\"\n[deploy.faults.kill]\ntarget = \"hop3\"\nstart = \"5s\"\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		measure time.Duration
		err     string // one error a line
	}{
		{40 * time.Second, ""},
		{30 * time.Second, "s.toml:7: deploy.faults.link_cut.start: 30s is not before the end of the measurement (30s long"},
		{4 * time.Second, "s.toml:7: deploy.faults.link_cut.start: 30s is not before the end of the measurement (4s long, timed from its start, after the warm-up), so the fault would never act; start it earlier or measure longer\ns.toml:11: deploy.faults.kill.start: 5s is not before"},
	} {
		err := p.CheckFaultTimes(p.Spec, tc.measure)
		if tc.err == "" && err != nil {
			t.Errorf("measure %s: error %v", tc.measure, err)
		}
		for _, want := range strings.Split(tc.err, "\n") {
			if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("measure %s: error %v, want %q", tc.measure, err, want)
			}
		}
	}
}
