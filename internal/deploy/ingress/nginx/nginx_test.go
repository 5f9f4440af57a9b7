package nginx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/svclab/svclab/internal/tempdir"
)

// TestMain removes the process's temp root at the end, as svclab's
// commands do (the ingress's directories live in it; it was left behind).
func TestMain(m *testing.M) {
	code := m.Run()
	_ = tempdir.RemoveOwn()
	os.Exit(code)
}

func TestProxyAndStop(t *testing.T) {
	if _, err := Find(); err != nil {
		t.Skipf("nginx is missing (.ci/run installs it): %v", err)
	}
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"path":"` + r.URL.Path + `","body":` + string(b) + `}`))
	}))
	defer up.Close()
	s, err := Start(context.Background(), strings.TrimPrefix(up.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	if s.URL() == up.URL {
		t.Fatal("the ingress URL is the upstream's")
	}
	// One process, which its parent-death signal ends with svclab: a
	// worker forked by a master would outlive a kill -9 of svclab.
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", s.PID(), s.PID()))
	if err != nil || len(strings.TrimSpace(string(kids))) > 0 {
		t.Errorf("nginx (pid %d) has children %q (%v), want none", s.PID(), kids, err)
	}
	for i := range 3 {
		resp, err := http.Post(s.URL()+"/svclab.shop.Gateway/GetProduct", "application/json", strings.NewReader(`{"id":`+strconv.Itoa(i)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := `{"path":"/svclab.shop.Gateway/GetProduct","body":{"id":` + strconv.Itoa(i) + `}}`; string(b) != want || resp.StatusCode != 200 {
			t.Fatalf("through nginx: %s %s, want %s", resp.Status, b, want)
		}
		if !strings.HasPrefix(resp.Header.Get("Server"), "nginx") {
			t.Errorf("Server header %q: the answer did not pass through nginx", resp.Header.Get("Server"))
		}
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("upstream saw %d requests, want 3", n)
	}
	pid, dir := s.PID(), s.dir
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("nginx %d still exists after Stop (%v)", pid, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nginx.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its directory %s is still there", dir)
	}
}
