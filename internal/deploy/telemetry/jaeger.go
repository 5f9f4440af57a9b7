package telemetry

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/jaegerapi"
	"github.com/svclab/svclab/internal/deploy/ports"
	"github.com/svclab/svclab/internal/procgroup"
)

// jaeger is the tracing program of a deployment with deploy.tracing: a
// Jaeger v2 process of its own, keeping spans in memory, on loopback ports
// nobody else uses, with its log in the deployment's directory.
type jaeger struct {
	cmd   *exec.Cmd
	group *procgroup.Leader
	done  chan struct{}
	log   string
	otlp  string // OTLP/gRPC host:port
	query string // base URL of the query service's HTTP API
	start time.Time
}

// jaegerConfig is Jaeger v2's configuration (an OpenTelemetry Collector's):
// OTLP in, in-memory storage, the query API, and no telemetry of its own
// on fixed ports.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: svclab
    http:
      endpoint: %[1]s
    grpc:
      endpoint: %[2]s
  jaeger_storage:
    backends:
      svclab:
        memory:
          max_traces: %[4]d
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[3]s
        max_recv_msg_size_mib: 64
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: svclab
`

// jaegerMaxTraces bounds the traces Jaeger keeps in memory: a minute at
// 10,000 req/s with every request traced, some 2 GB at 5 spans a trace.
const jaegerMaxTraces = 600_000

// startJaeger starts Config.JaegerPath for the deployment and waits until
// its query API answers, or ctx ends. On error nothing is left running.
func (t *Telemetry) startJaeger(ctx context.Context) (_ *jaeger, err error) {
	addrs, err := ports.Free(3)
	if err != nil {
		return nil, fmt.Errorf("Jaeger: %w", err)
	}
	conf := filepath.Join(t.cfg.Dir, "jaeger.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, jaegerConfig, addrs[0], addrs[1], addrs[2], jaegerMaxTraces), 0o600); err != nil {
		return nil, fmt.Errorf("Jaeger: %w", err)
	}
	j := &jaeger{log: filepath.Join(t.cfg.Dir, "jaeger.log"), otlp: addrs[2], query: "http://" + addrs[0], start: time.Now()}
	j.cmd = niceCommand(t.cfg.JaegerPath, "--config", "file:"+conf)
	if j.group, j.done, err = t.startProgram(ctx, "Jaeger", j.cmd, j.log, j.ready); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *jaeger) ready(ctx context.Context) bool {
	if !httpOK(ctx, j.query+"/api/services") {
		return false
	}
	// The query API may come up before the OTLP receiver.
	c, err := net.DialTimeout("tcp", j.otlp, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (j *jaeger) stop() {
	if j != nil {
		stopGroup(j.group, j.done)
	}
}

// settleTime is how long the span count must hold still before the spans
// are taken as all there: Jaeger batches what it receives (200 ms) before
// it stores it, so the last spans the hosts flushed as they stopped show up
// a little after.
const settleTime = 500 * time.Millisecond

// settledSpans reads the spans until two reads settleTime apart agree, or
// ctx ends (then the last read stands).
func (j *jaeger) settledSpans(ctx context.Context, services []string) ([]deploy.Span, error) {
	prev := -1
	for {
		spans, err := j.spans(ctx, services)
		if err != nil || len(spans) == prev {
			return spans, err
		}
		prev = len(spans)
		select {
		case <-ctx.Done():
			return spans, nil
		case <-time.After(settleTime):
		}
	}
}

// spans reads every span of the services (the deployment's groups and
// proxies) from Jaeger, each trace once.
func (j *jaeger) spans(ctx context.Context, services []string) ([]deploy.Span, error) {
	return jaegerapi.Spans(ctx, j.query, jaegerapi.Query{
		Services: services,
		From:     j.start.Add(-time.Minute),
		To:       time.Now().Add(time.Minute),
		Limit:    jaegerMaxTraces - 1, // Jaeger wants fewer than it keeps
	})
}
