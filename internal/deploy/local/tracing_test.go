package local_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/local"
)

// TestTracingJaeger deploys a three-hop chain with deploy.tracing = 1 and
// its own Jaeger, hop1 and hop2 in one process (an inproc hop) and hop3 in
// another (a hop over the transport), makes calls, and checks in the real
// backend that every call is one trace spanning every hop: a server span
// per component and a client span per hop, correctly parented, each made
// by the process that runs it.
func TestTracingJaeger(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(deploy.JaegerPath()); err != nil {
		t.Skipf("Jaeger %s is not built (make jaeger): %v", deploy.JaegerVersion, err)
	}
	for _, tr := range []string{"grpc", "http", "netrpc", "protorpc"} {
		t.Run(tr, func(t *testing.T) { testTracing(t, tr) })
	}
}

func testTracing(t *testing.T, tr string) {
	p := resolve(t, fmt.Sprintf(`[app]
name = "chain"
hops = 3
[deploy]
transport = %q
placement = "pair"
tracing = 1.0
[deploy.placements]
pair = [["hop1", "hop2"], ["hop3"]]
`, tr))
	traces := tracesOf(t, p, 20)
	for id, tr := range traces {
		byID := map[string]deploy.Span{}
		for _, s := range tr {
			byID[s.SpanID] = s
		}
		var got []string
		for _, s := range tr {
			who := s.Component
			if s.Kind == "client" {
				who = "→" + s.Peer
			}
			parent := "root"
			if s.ParentID != "" {
				pa, ok := byID[s.ParentID]
				if !ok {
					t.Errorf("trace %s: span %s has a parent missing from the trace", id, s.SpanID)
					continue
				}
				parent = pa.Kind + ":" + pa.Component + pa.Peer
			}
			got = append(got, fmt.Sprintf("%s %s@%s under %s", s.Kind, who, s.Service, parent))
		}
		slices.Sort(got)
		want := []string{
			"client →hop2@hop1+hop2 under server:hop1",
			"client →hop3@hop1+hop2 under server:hop2",
			"server hop1@hop1+hop2 under root",
			"server hop2@hop1+hop2 under client:hop2",
			"server hop3@hop3 under client:hop3",
		}
		if !slices.Equal(got, want) {
			t.Errorf("trace %s:\n got %q\nwant %q", id, got, want)
		}
	}
}

// TestTracingBackendFails checks that a tracing backend that exits at start
// fails the deployment with one clear error, before any host starts, and
// leaves nothing running.
func TestTracingBackendFails(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1) to stand for a backend that fails")
	}
	t.Setenv(deploy.JaegerEnv, bin)
	p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\nplacement = \"split\"\ntracing = 1.0\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := local.Deploy(ctx, p, local.Options{})
	if err == nil {
		d.Stop(context.Background())
		t.Fatal("deployed with a tracing backend that exits at start")
	}
	if !strings.Contains(err.Error(), "deploy.tracing: Jaeger "+bin+" exited at start") {
		t.Errorf("error: %v", err)
	}
	m := regexp.MustCompile(`deployment ([0-9a-f]+): `).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error names no deployment: %v", err)
	}
	if procs := deploymentProcs(m[1]); len(procs) > 0 {
		t.Errorf("processes of deployment %s left running: %v", m[1], procs)
	}
}
