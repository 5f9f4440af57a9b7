package netns

import (
	"testing"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/runtime"
)

// inner is a machine deployment with the capabilities the local one has.
type inner struct{ deploy.Deployment }

func (i inner) Capabilities() deploy.Capabilities {
	return deploy.Capabilities{Scaling: i, Traces: i, Metrics: i, Telemetry: i, Killer: i, HopFaults: i, Mesh: i}
}
func (inner) ScaleEvents() []deploy.ScaleEvent              { return nil }
func (inner) Spans() ([]deploy.Span, error)                 { return nil, nil }
func (inner) Series() ([]deploy.Sample, error)              { return nil, nil }
func (inner) TelemetryProcesses() []deploy.TelemetryProcess { return nil }
func (inner) MeshLines() []string                           { return nil }
func (inner) Kill(int, int) (deploy.ProcessInfo, error) {
	return deploy.ProcessInfo{}, nil
}
func (inner) StartFault(f runtime.Fault) (func() error, error) { return nil, nil }

// TestWrapperKeepsCapabilities checks that a netns deployment, which wraps
// the local deployment of its processes, can do what its inner one can,
// and does its own hop faults and description: a wrapper that lost them
// made [deploy.autoscale] under netns write no scaling.parquet.
func TestWrapperKeepsCapabilities(t *testing.T) {
	in := inner{}
	d := &Deployment{Deployment: in}
	caps := d.Capabilities()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"Scaling", caps.Scaling, in},
		{"Traces", caps.Traces, in},
		{"Metrics", caps.Metrics, in},
		{"Telemetry", caps.Telemetry, in},
		{"Killer", caps.Killer, in},
		{"Mesh", caps.Mesh, in},
		{"HopFaults", caps.HopFaults, d},
		{"Describer", caps.Describer, d},
		{"Resources", caps.Resources, nil},
		{"Load", caps.Load, nil},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v (%T), want %v (%T)", c.name, c.got, c.got, c.want, c.want)
		}
	}
	if (&placement{}).Capabilities().MachineCgroups == nil || (&placement{}).Capabilities().Client == nil {
		t.Error("the netns network lost its machine cgroups or its client machine")
	}
}
