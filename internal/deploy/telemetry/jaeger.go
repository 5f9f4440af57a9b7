package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/ports"
)

// jaeger is the tracing program of a deployment with deploy.tracing: a
// Jaeger v2 process of its own, keeping spans in memory, on loopback ports
// nobody else uses, with its log in the deployment's directory.
type jaeger struct {
	cmd   *exec.Cmd
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
	if j.done, err = t.startProgram(ctx, "Jaeger", j.cmd, j.log, j.ready); err != nil {
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
		stopGroup(j.cmd, j.done)
	}
}

// jaegerTrace is a trace as Jaeger's query API (/api/traces) gives it.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		TraceID       string `json:"traceID"`
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		StartTime int64 `json:"startTime"` // µs since the epoch
		Duration  int64 `json:"duration"`  // µs
		Tags      []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
		ProcessID string `json:"processID"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
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

// spans reads every span of the services (the deployment's groups) from
// Jaeger, each trace once.
func (j *jaeger) spans(ctx context.Context, services []string) ([]deploy.Span, error) {
	seen := map[string]bool{}
	var out []deploy.Span
	end := time.Now().Add(time.Minute)
	for _, svc := range services {
		q := url.Values{
			"service": {svc},
			"start":   {strconv.FormatInt(j.start.Add(-time.Minute).UnixMicro(), 10)},
			"end":     {strconv.FormatInt(end.UnixMicro(), 10)},
			"limit":   {strconv.Itoa(jaegerMaxTraces - 1)}, // Jaeger wants fewer than it keeps
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.query+"/api/traces?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("Jaeger: query %s: %w", svc, err)
		}
		var body struct {
			Data   []jaegerTrace `json:"data"`
			Errors []struct {
				Msg string `json:"msg"`
			} `json:"errors"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("Jaeger: query %s: HTTP %s: %w", svc, resp.Status, err)
		}
		if resp.StatusCode != http.StatusOK || len(body.Errors) > 0 {
			return nil, fmt.Errorf("Jaeger: query %s: HTTP %s: %v", svc, resp.Status, body.Errors)
		}
		for _, t := range body.Data {
			if seen[t.TraceID] {
				continue
			}
			seen[t.TraceID] = true
			for _, s := range t.Spans {
				sp := deploy.Span{
					TraceID: s.TraceID, SpanID: s.SpanID, Name: s.OperationName,
					Service:  t.Processes[s.ProcessID].ServiceName,
					Start:    time.UnixMicro(s.StartTime),
					Duration: time.Duration(s.Duration) * time.Microsecond,
				}
				for _, r := range s.References {
					if r.RefType == "CHILD_OF" {
						sp.ParentID = r.SpanID
					}
				}
				for _, tag := range s.Tags {
					v := fmt.Sprint(tag.Value)
					switch tag.Key {
					case "span.kind":
						sp.Kind = v
					case "svclab.component":
						sp.Component = v
					case "svclab.peer":
						sp.Peer = v
					case "error":
						sp.Error = v == "true"
					}
				}
				out = append(out, sp)
			}
		}
	}
	slices.SortFunc(out, func(a, b deploy.Span) int { return a.Start.Compare(b.Start) })
	return out, nil
}
