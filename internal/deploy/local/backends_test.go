package local_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// TestTelemetrySampled: a deployment's Jaeger and Prometheus are listed as
// telemetry backends, named and with their real PIDs, whose counters read
// the CPU and memory they use; once the deployment stops, none is listed.
// A deployment without them lists none.
func TestTelemetrySampled(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(deploy.JaegerPath()); err != nil {
		t.Skipf("Jaeger %s is not built (make jaeger): %v", deploy.JaegerVersion, err)
	}
	if _, err := deploy.PrometheusPath(); err != nil {
		t.Skipf("no Prometheus: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, deploy string
		want         []string
	}{
		{"tracing and metrics", "tracing = 1.0\nmetrics = true\n", []string{"telemetry.jaeger", "telemetry.prometheus"}},
		{"tracing", "tracing = 0.5\n", []string{"telemetry.jaeger"}},
		{"none", "mtls = true\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := resolve(t, "[app]\nname = \"chain\"\nhops = 2\n[deploy]\nplacement = \"split\"\n"+tc.deploy)
			d, err := localDeployer(t).Deploy(ctx, topo, deploy.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Stop(context.Background())
			bs := d.Capabilities().Telemetry
			if bs == nil {
				t.Fatalf("%T has no backends capability", d)
			}
			pids := backendsOf(t, d.ID())
			got := bs.TelemetryProcesses()
			if len(got) != len(tc.want) {
				t.Fatalf("backends %+v, want %v", got, tc.want)
			}
			for i, b := range got {
				if b.Info.Name != tc.want[i] || b.Info.Role != deploy.RoleTelemetry {
					t.Errorf("backend %d: %+v, want %s of role %s", i, b.Info, tc.want[i], deploy.RoleTelemetry)
				}
				if want := pids[b.Info.Name[len("telemetry."):]]; b.Info.PID != want || want == 0 {
					t.Errorf("%s: pid %d, the process found is %d", b.Info.Name, b.Info.PID, want)
				}
				if b.Info.Limits != nil {
					t.Errorf("%s: limits %+v without a CPU list", b.Info.Name, b.Info.Limits)
				}
				u, err := b.Source.Sample(ctx)
				if err != nil {
					t.Fatalf("%s: sample: %v", b.Info.Name, err)
				}
				if u.CPUSeconds <= 0 || u.RSSBytes <= 0 {
					t.Errorf("%s: sample %+v, want CPU and memory used", b.Info.Name, u)
				}
			}
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if left := bs.TelemetryProcesses(); len(left) != 0 {
				t.Errorf("after Stop: backends %+v", left)
			}
		})
	}
}
