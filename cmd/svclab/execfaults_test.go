package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestExecRunKill is TestRunKill over programs: the exec test system
// (a Python frontend calling Redis and nginx) with a kill of nginx's
// first replica two seconds into the measurement. With two replicas the
// front before them serves every call from the survivor a second later;
// with one, every call after the kill fails. Either way the run is no
// crash, and run.json names the killed process.
func TestExecRunKill(t *testing.T) {
	t.Parallel()
	needPrograms(t, "python3", "redis-server", "nginx")
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
[deploy.faults.kill]
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
`, dir)
	checkKill(t, runFaults(t, src, "deploy.replicas.static"), map[string]string{"1": "static", "2": "static#0"})
}
