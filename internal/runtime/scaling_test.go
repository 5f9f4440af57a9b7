package runtime_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/spec"
)

const splitChain = "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\n"

// loadResolve loads src and resolves it, returning the first error of
// either step.
func loadResolve(t *testing.T, src string) (*runtime.Topology, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		return nil, err
	}
	return runtime.Resolve(s)
}

func TestResolveScaling(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		replicas []int
		balancer string
		scaled   int // group with an autoscaler, or -1
	}{
		{"default one each", splitChain, []int{1, 1, 1}, "round_robin", -1},
		{"by component", splitChain + "balancer = \"least_outstanding\"\n[deploy.replicas]\nhop2 = 3\n", []int{1, 3, 1}, "least_outstanding", -1},
		{"the entry's group", splitChain + "[deploy.replicas]\nhop1 = 2\n", []int{2, 1, 1}, "round_robin", -1},
		{"by group name", "[app]\nname = \"chain\"\n[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"hop1\"], [\"hop2\", \"hop3\"]]\n[deploy.replicas]\n\"hop2+hop3\" = 2\n", []int{1, 2}, "round_robin", -1},
		{"autoscale starts at min", splitChain + "[deploy.autoscale.hop3]\nmin = 2\nmax = 5\ncpu_target = 70\n", []int{1, 1, 2}, "round_robin", 2},
		{"replicas within autoscale", splitChain + "[deploy.replicas]\nhop3 = 4\n[deploy.autoscale.hop3]\nmin = 2\nmax = 5\ncpu_target = 70\n", []int{1, 1, 4}, "round_robin", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := loadResolve(t, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for i, g := range p.Groups {
				got = append(got, g.Replicas)
				if (g.Autoscale != nil) != (i == tc.scaled) {
					t.Errorf("group %s autoscale = %v", g.Name, g.Autoscale)
				}
			}
			if !slices.Equal(got, tc.replicas) || p.Balancer != tc.balancer {
				t.Errorf("replicas %v balancer %q, want %v %q", got, p.Balancer, tc.replicas, tc.balancer)
			}
		})
	}
}

func TestAutoscaleDefaults(t *testing.T) {
	p, err := loadResolve(t, splitChain+"[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 80\n")
	if err != nil {
		t.Fatal(err)
	}
	a := p.Groups[1].Autoscale
	if a.SyncPeriod.D() != 15*time.Second || a.ScaleDownWindow.D() != 300*time.Second || a.Tolerance != 0.1 || a.CPUTarget != 80 || a.MemoryTarget != 0 || a.CPURequest != 1 || a.MemoryRequest != 0 {
		t.Errorf("defaults = %+v", *a)
	}
}

// TestAutoscaleRequests reads the requests of the targets from the group's
// limits in [deploy.resources], named by component here and by group there.
func TestAutoscaleRequests(t *testing.T) {
	p, err := loadResolve(t, splitChain+"[deploy.resources.hop2]\ncpu = 0.5\nmemory = \"256MiB\"\n[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 70\nmemory_target = 80\n")
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Groups[1].Autoscale; a.CPURequest != 0.5 || a.MemoryRequest != 256<<20 {
		t.Errorf("requests %g cores, %d bytes; want 0.5 and 256MiB", a.CPURequest, a.MemoryRequest)
	}
}

func TestScalingErrors(t *testing.T) {
	tests := []struct {
		name, spec, key string
		line            int
		msg             string
	}{
		{"zero replicas", splitChain + "[deploy.replicas]\nhop2 = 0\n", "deploy.replicas.hop2", 6, "at least 1 process, got 0"},
		{"negative replicas", splitChain + "[deploy.replicas]\nhop2 = -2\n", "deploy.replicas.hop2", 6, "got -2"},
		{"replicas not a number", splitChain + "[deploy.replicas]\nhop2 = \"three\"\n", "deploy.replicas.hop2", 6, "whole number"},
		{"unknown group", splitChain + "[deploy.replicas]\nhop9 = 2\n", "deploy.replicas.hop9", 6, `no group or component "hop9" in placement "split" (groups: hop1, hop2, hop3)`},
		{"group twice", "[app]\nname = \"chain\"\n[deploy]\nplacement = \"p\"\n[deploy.placements]\np = [[\"hop1\"], [\"hop2\", \"hop3\"]]\n[deploy.replicas]\nhop2 = 2\nhop3 = 3\n", "deploy.replicas.hop3", 9, "names group hop2+hop3, which deploy.replicas.hop2 names already"},
		{"replicas over inproc", "[app]\nname = \"chain\"\n[deploy]\ntransport = \"inproc\"\n[deploy.replicas]\nhop1 = 2\n", "deploy.replicas.hop1", 6, `transport "inproc" reaches the entry through one process's gateway`},
		{"bad balancer", splitChain + "balancer = \"random\"\n", "deploy.balancer", 5, `must be one of ["round_robin" "least_outstanding"], got "random"`},
		{"min above max", splitChain + "[deploy.autoscale.hop2]\nmin = 4\nmax = 2\ncpu_target = 50\n", "deploy.autoscale.hop2.max", 7, "must be at least min (4), got 2"},
		{"min zero", splitChain + "[deploy.autoscale.hop2]\nmin = 0\nmax = 2\ncpu_target = 50\n", "deploy.autoscale.hop2.min", 6, "at least 1"},
		{"no max", splitChain + "[deploy.autoscale.hop2]\nmin = 1\ncpu_target = 50\n", "deploy.autoscale.hop2", 5, "needs max"},
		{"cpu target zero", splitChain + "[deploy.autoscale.hop2]\nmin = 1\nmax = 2\ncpu_target = 0\n", "deploy.autoscale.hop2.cpu_target", 8, "from 1 to 100, got 0"},
		{"memory target without a limit", splitChain + "[deploy.autoscale.hop2]\nmin = 1\nmax = 2\nmemory_target = 80\n", "deploy.autoscale.hop2.memory_target", 8, "has none: set deploy.resources.hop2.memory"},
		{"memory target above 100", splitChain + "[deploy.autoscale.hop2]\nmin = 1\nmax = 2\nmemory_target = 101\n", "deploy.autoscale.hop2.memory_target", 8, "from 1 to 100, got 101"},
		{"no target", splitChain + "[deploy.autoscale.hop2]\nmin = 1\nmax = 2\n", "deploy.autoscale.hop2", 5, "needs cpu_target or memory_target"},
		{"unknown autoscale key", splitChain + "[deploy.autoscale.hop2]\nmin = 1\nmax = 2\ncpu = 50\n", "deploy.autoscale.hop2.cpu", 8, "unknown key"},
		{"autoscale unknown group", splitChain + "[deploy.autoscale.cart]\nmin = 1\nmax = 2\ncpu_target = 50\n", "deploy.autoscale.cart", 5, `no group or component "cart"`},
		{"replicas outside bounds", splitChain + "[deploy.replicas]\nhop2 = 9\n[deploy.autoscale.hop2]\nmin = 1\nmax = 3\ncpu_target = 50\n", "deploy.replicas.hop2", 6, "outside the bounds of deploy.autoscale.hop2 (1 to 3)"},
		{"bad window", splitChain + "[deploy.autoscale.hop2]\nmin = 1\nmax = 2\ncpu_target = 50\nscale_down_window = \"-1s\"\n", "deploy.autoscale.hop2.scale_down_window", 9, "must not be negative"},
		{"zero sync period", splitChain + "[deploy.autoscale.hop2]\nmin = 1\nmax = 2\ncpu_target = 50\nsync_period = \"0s\"\n", "deploy.autoscale.hop2.sync_period", 9, "must be positive"},
		{"tolerance one", splitChain + "[deploy.autoscale.hop2]\nmin = 1\nmax = 2\ncpu_target = 50\ntolerance = 1.0\n", "deploy.autoscale.hop2.tolerance", 9, "up to (not including) 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadResolve(t, tc.spec)
			var se *spec.Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T), want a *spec.Error", err, err)
			}
			if se.Key != tc.key || se.Line != tc.line || !strings.Contains(se.Error(), tc.msg) {
				t.Errorf("got %q (key %q line %d), want key %q line %d containing %q", se.Error(), se.Key, se.Line, tc.key, tc.line, tc.msg)
			}
		})
	}
}

// TestReplicasAsFactor sets replicas through a factor level, as
// "deploy.replicas.hop2" = [1, 3] does.
func TestReplicasAsFactor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.toml")
	if err := os.WriteFile(path, []byte(splitChain), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{1, 3} {
		r, err := s.With(map[string]any{"deploy.replicas.hop2": n})
		if err != nil {
			t.Fatal(err)
		}
		p, err := runtime.Resolve(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Groups[1].Replicas; got != int(n) {
			t.Errorf("level %d: replicas %d", n, got)
		}
	}
	r, err := s.With(map[string]any{"deploy.replicas.hop2": int64(0)})
	if err == nil {
		_, err = runtime.Resolve(r)
	}
	if err == nil || !strings.Contains(err.Error(), "deploy.replicas.hop2") {
		t.Errorf("level 0: %v, want an error naming deploy.replicas.hop2", err)
	}
}
