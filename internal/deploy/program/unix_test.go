package program

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/load"
)

// unixSystem is the test system on unix sockets: the Python frontend,
// Redis and nginx each listen on a socket's path ({listen}) and reach
// their callees at theirs ({addr:<name>}).
func unixSystem(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/system")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`[app]
name = "exec"
entry = "frontend"

[app.components.frontend]
command = ["python3", "frontend.py", "{listen}"]
protocol = "http"
health = "/healthz"
env = { REDIS_ADDR = "{addr:cart}", STATIC_ADDR = "{addr:static}" }
dir = %[1]q

[app.components.cart]
command = ["redis-server", "--port", "0", "--unixsocket", "{listen}", "--save", "", "--appendonly", "no"]
protocol = "tcp"

[app.components.static]
command = ["./nginx.sh", "unix:{listen}"]
protocol = "http"
health = "/healthz"
dir = %[1]q

[deploy]
network = "unix"

[load.request]
path = "/"
`, dir)
}

// TestUnixSockets deploys the system with deploy.network = "unix": every
// program listens on a socket in one private directory, passes its
// health check over it (a GET for nginx and the frontend, a connect for
// Redis), and reaches its callees over theirs; the load drives the entry
// over its socket; Stop removes the directory.
func TestUnixSockets(t *testing.T) {
	need(t, "python3", "redis-server", "nginx")
	d, err := deployOf(t, writeSpec(t, unixSystem(t)))
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	for _, p := range d.Processes() {
		for c, ep := range p.Listeners() {
			if ep.Network != "unix" || !filepath.IsAbs(ep.Addr) {
				t.Errorf("%s listens for %s at %s, not on a unix socket", p.Info(), c, ep)
				continue
			}
			if st, err := os.Stat(ep.Addr); err != nil || st.Mode()&os.ModeSocket == 0 {
				t.Errorf("%s: %s is not a socket (%v)", c, ep.Addr, err)
			}
			dir = filepath.Dir(ep.Addr)
		}
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the sockets' directory %s: %v, %v; want one of svclab's alone", dir, st.Mode(), err)
	}
	sock := filepath.Join(dir, "frontend.sock")
	if got, want := d.GatewayURL(), load.UnixTarget(sock); got != want {
		t.Errorf("GatewayURL %s, want %s", got, want)
	}
	var desc strings.Builder
	deploy.Describe(&desc, d)
	if want := "curl --unix-socket " + sock + " http://localhost/\n"; !strings.Contains(desc.String(), want) {
		t.Errorf("Describe wrote\n%s\nwant %q in it", desc.String(), want)
	}
	// The load's own clients, as a run drives the entry.
	cfg := load.Config{Target: d.GatewayURL(), Mode: "closed", Users: 2, Requests: 40, Request: &load.Request{Path: "/"}}
	target, err := load.NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := load.Run(context.Background(), cfg, target, load.Options{})
	target.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	if tot, _ := res.Op("total"); tot.Count != 40 || tot.Errors != 0 {
		t.Errorf("the load over %s: %d calls, %d errors (%v), want 40 and none", d.GatewayURL(), tot.Count, tot.Errors, tot.ErrorsByClass)
	}
	// Each answer counts in Redis, and carries nginx's page: both reached
	// over their sockets.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	resp, err := client.Get("http://localhost/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct {
		Hits      int `json:"hits"`
		PageBytes int `json:"page_bytes"`
	}
	page, _ := os.ReadFile("testdata/system/static/index.html")
	if err := json.Unmarshal(b, &got); err != nil || got.Hits != 41 || got.PageBytes != len(page) {
		t.Errorf("after the load: %s %q (%v), want visit 41 and the page's %d bytes", resp.Status, b, err, len(page))
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the sockets' directory %s after Stop: %v, want it removed", dir, err)
	}
}
