package local_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy"
)

// TestHTTPLimits deploys a split chain over the http transport with short
// [deploy.http_limits] and checks, with real clients, that the gateway and
// a transport listener cut off what the limits say while normal calls keep
// answering: curl's oversized body gets 413 before it is read, a text
// body 415, a client trickling its headers is cut off, and idle
// connections are closed.
func TestHTTPLimits(t *testing.T) {
	t.Parallel()
	p := resolve(t, `[app]
name = "chain"
hops = 2
[deploy]
transport = "http"
placement = "split"
[deploy.http_limits]
max_body = "64KiB"
read_header_timeout = "500ms"
idle_timeout = "1s"
`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := localDeployer(t).Deploy(ctx, p, deploy.Options{})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	defer d.Stop(context.Background())
	gw := d.GatewayURL()
	hop2 := ""
	for _, pr := range d.Processes() {
		for _, l := range pr.Listeners() {
			if strings.HasPrefix(pr.Info().Group, "hop2") && l.Transport == "http" {
				hop2 = "http://" + l.Addr
			}
		}
	}
	if hop2 == "" {
		t.Fatal("no http listener of hop2 found")
	}
	method := "/svclab.chain.Hop/Call"

	// A connection per call: the server closes idle keep-alive connections
	// after idle_timeout (1 s), and a POST on a pooled connection the server
	// is closing fails with EOF and is not retried by net/http.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	call := func(base string) error {
		resp, err := client.Post(base+method, "application/json", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	for _, base := range []string{gw, hop2} {
		if err := call(base); err != nil {
			t.Fatalf("normal call to %s: %v", base, err)
		}
	}

	t.Run("oversized body, curl", func(t *testing.T) {
		curl, err := exec.LookPath("curl")
		if err != nil {
			t.Skip("curl not installed")
		}
		big := filepath.Join(t.TempDir(), "big.json")
		body := `{"payload":"` + strings.Repeat("x", 1<<20) + `"}`
		if err := os.WriteFile(big, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, base := range []string{gw, hop2} {
			out, err := exec.CommandContext(ctx, curl, "-s", "-o", "/dev/null", "-w", "%{http_code}",
				"-H", "Content-Type: application/json", "--data-binary", "@"+big, base+method).Output()
			if err != nil {
				t.Fatalf("curl %s: %v", base, err)
			}
			if string(out) != "413" {
				t.Errorf("curl with a 1 MiB body to %s: status %s, want 413", base, out)
			}
		}
	})

	t.Run("text body", func(t *testing.T) {
		resp, err := client.Post(gw+method, "text/plain", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("text/plain body: status %d, want 415", resp.StatusCode)
		}
	})

	t.Run("trickled headers", func(t *testing.T) {
		u, _ := url.Parse(gw)
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		req := "POST " + method + " HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200)
		cut := false
		for i := 0; i < len(req) && time.Since(start) < 10*time.Second; i++ {
			if _, err := c.Write([]byte{req[i]}); err != nil {
				cut = true
				break
			}
			// Meanwhile, others are served.
			if i == 10 {
				if err := call(gw); err != nil {
					t.Errorf("normal call while a client trickles: %v", err)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !cut {
			// The server may have closed without the writes noticing yet:
			// a read sees it.
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err := c.Read(make([]byte, 1))
			cut = err != nil && !isTimeout(err)
		}
		if el := time.Since(start); !cut || el > 5*time.Second {
			t.Errorf("a client trickling headers was not cut off (cut=%v after %s; read_header_timeout is 500ms)", cut, el)
		}
	})

	t.Run("idle connections", func(t *testing.T) {
		u, _ := url.Parse(gw)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for i := 0; i < 200; i++ {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			conns = append(conns, c)
		}
		// One of them makes a request, then idles as a keep-alive
		// connection; the others never say anything.
		fmt.Fprintf(conns[0], "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", method)
		resp, err := http.ReadResponse(bufio.NewReader(conns[0]), nil)
		if err != nil {
			t.Fatalf("keep-alive request: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err := call(gw); err != nil {
			t.Errorf("normal call beside 200 idle connections: %v", err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for i, c := range conns {
			c.SetReadDeadline(deadline)
			n, err := c.Read(make([]byte, 1))
			if err == nil || isTimeout(err) {
				t.Fatalf("idle connection %d still open after %s (read %d bytes, %v)", i, time.Until(deadline)+5*time.Second, n, err)
			}
		}
	})

	if err := call(gw); err != nil {
		t.Errorf("normal call after the bad clients: %v", err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
