// Package jaegerapi reads spans from a Jaeger's query API (/api/services,
// /api/traces) as deploy.Spans. It is the one reader of Jaeger's JSON:
// the telemetry backends read every span with it when a deployment stops,
// and the trace recorder the last seconds' during a run, for the live
// per-hop view.
package jaegerapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// Query is which spans to read.
type Query struct {
	// Services are the services (Jaeger's name for a span's process)
	// whose traces to read; nil reads every service the Jaeger knows.
	Services []string
	// From and To bound when the traces began.
	From, To time.Time
	// Limit is the most traces read in all, each counted once however
	// many of the services it crosses.
	Limit int
}

// Spans reads the spans of the traces q names from the Jaeger whose query
// API is at base, each trace once, in the order they began.
func Spans(ctx context.Context, base string, q Query) ([]deploy.Span, error) {
	services := q.Services
	if services == nil {
		var body struct {
			Data []string `json:"data"`
		}
		if err := get(ctx, base+"/api/services", &body); err != nil {
			return nil, err
		}
		services = body.Data
	}
	seen := map[string]bool{}
	var out []deploy.Span
	for _, svc := range services {
		if len(seen) >= q.Limit {
			break
		}
		v := url.Values{
			"service": {svc},
			"start":   {strconv.FormatInt(q.From.UnixMicro(), 10)},
			"end":     {strconv.FormatInt(q.To.UnixMicro(), 10)},
			"limit":   {strconv.Itoa(q.Limit - len(seen))},
		}
		var body struct {
			Data []trace `json:"data"`
		}
		if err := get(ctx, base+"/api/traces?"+v.Encode(), &body); err != nil {
			return nil, fmt.Errorf("query %s: %w", svc, err)
		}
		for _, t := range body.Data {
			if seen[t.TraceID] {
				continue
			}
			seen[t.TraceID] = true
			out = t.appendSpans(out)
		}
	}
	slices.SortFunc(out, func(a, b deploy.Span) int { return a.Start.Compare(b.Start) })
	return out, nil
}

// trace is a trace as the query API gives it.
type trace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
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

// appendSpans appends t's spans to out. Proxy is left for the caller,
// who knows which services are proxies.
func (t trace) appendSpans(out []deploy.Span) []deploy.Span {
	for _, s := range t.Spans {
		sp := deploy.Span{
			TraceID: t.TraceID, SpanID: s.SpanID, Name: s.OperationName,
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
			switch v := fmt.Sprint(tag.Value); tag.Key {
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
	return out
}

// get decodes the JSON the query API answers at u into v; an answer
// that is not 200 OK, or carries errors, is an error.
func get(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("Jaeger: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("Jaeger: %s: HTTP %s", u, resp.Status)
	}
	b := json.NewDecoder(resp.Body)
	var raw json.RawMessage
	if err := b.Decode(&raw); err != nil {
		return fmt.Errorf("Jaeger: %s: %w", u, err)
	}
	var e struct {
		Errors []struct {
			Msg string `json:"msg"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &e); err == nil && len(e.Errors) > 0 {
		return fmt.Errorf("Jaeger: %s: %v", u, e.Errors)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("Jaeger: %s: %w", u, err)
	}
	return nil
}
