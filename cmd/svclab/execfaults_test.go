package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/svclab/svclab/internal/deploy/sidecar"
)

// TestExecRunKill is TestRunKill over programs: the exec test system
// (a Python frontend calling Redis and nginx) with a kill of nginx's
// first replica two seconds into the measurement. With two replicas the
// front before them serves every call from the survivor a second later;
// with one, every call after the kill fails. Either way the run is no
// crash, and run.json names the killed process. With Envoy sidecars over
// mutual TLS, the frontend's proxy, not a front, balances over nginx's
// replicas, and stops sending to the killed one as soon.
func TestExecRunKill(t *testing.T) {
	t.Parallel()
	needPrograms(t, "python3", "redis-server", "nginx")
	for _, mesh := range []string{"", "[deploy]\nsidecar = \"envoy\"\nmtls = true\n"} {
		t.Run(fmt.Sprintf("sidecars=%t", mesh != ""), func(t *testing.T) {
			if mesh != "" {
				k, _ := sidecar.Lookup("envoy")
				if _, err := k.Binary(); err != nil {
					t.Skip(err)
				}
			}
			t.Parallel()
			execRunKill(t, mesh)
		})
	}
}

// execRunKill runs TestExecRunKill with the [deploy] table mesh.
func execRunKill(t *testing.T, mesh string) {
	dir, err := filepath.Abs(filepath.Dir(execSystem))
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`
[app]
name = "exec"
entry = "frontend"
[app.components.frontend]
command = ["python3", "frontend.py", "{listen}"]
dir = %[1]q
protocol = "http"
health = "/healthz"
calls = ["cart", "static"]
env = { REDIS_ADDR = "{addr:cart}", STATIC_ADDR = "{addr:static}" }
[app.components.cart]
command = ["redis-server", "--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
protocol = "tcp"
[app.components.static]
command = ["./nginx.sh", "{port}"]
dir = %[1]q
protocol = "http"
health = "/healthz"
%[2]s[deploy.faults.kill]
target = "static"
start = "2s"
replica = 0
[load]
rate = 50
warmup = "500ms"
duration = "5s"
[load.request]
path = "/"
[experiment]
name = "f"
order = "sequential"
seed = 1
[experiment.factors]
"deploy.replicas.static" = [1, 2]
`, dir, mesh)
	checkKill(t, runFaults(t, src, "deploy.replicas.static"), map[string]string{"1": "static", "2": "static#0"})
}
