package local_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/runtime"
)

// gatewayLoad posts the app's first default request to the gateway from
// workers concurrent callers sharing client until stop is closed.
func gatewayLoad(t *testing.T, client *http.Client, base string, r runtime.Request, workers int, stop <-chan struct{}) (ok, failed int64) {
	var wg sync.WaitGroup
	var nOK, nFail atomic.Int64
	var once sync.Once
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Post(base+r.Method, "application/json", bytes.NewReader(r.JSON()))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = &statusErr{resp.Status}
					}
				}
				if err != nil {
					once.Do(func() { t.Logf("first failure: %v", err) })
					nFail.Add(1)
				} else {
					nOK.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return nOK.Load(), nFail.Load()
}

type statusErr struct{ s string }

func (e *statusErr) Error() string { return "HTTP " + e.s }

// TestGatewayReplicas runs chain as 2 replicas of one process and drives
// it through GatewayURL alone, over HTTP/1.1 and over one h2c connection:
// every replica serves the gateway, the requests spread within ±10% (per
// request, so even one multiplexed connection spreads), and a replica
// added by Scale gets its share without the client knowing.
func TestGatewayReplicas(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"http1", "h2c"} {
		t.Run(proto, func(t *testing.T) {
			p := resolve(t, "[app]\nname = \"chain\"\n[deploy]\ntransport = \"grpc\"\n[deploy.replicas]\nhop1 = 2\n")
			ctx, d := deployFor(t, p)
			if !strings.HasPrefix(d.GatewayURL(), "http://127.0.0.1:") || d.GatewayURL() == "http://"+d.Gateway().Addr {
				t.Fatalf("gateway URL %s: want the front's, not replica 0's gateway %s", d.GatewayURL(), d.Gateway().Addr)
			}
			for _, pr := range d.Processes() {
				if _, ok := pr.Listeners()["gateway"]; !ok {
					t.Errorf("%s serves no gateway", pr.Info().Name)
				}
			}
			client := &http.Client{Timeout: 5 * time.Second}
			if proto == "h2c" {
				var prs http.Protocols
				prs.SetUnencryptedHTTP2(true)
				client.Transport = &http.Transport{Protocols: &prs, MaxConnsPerHost: 1}
			}
			defer client.CloseIdleConnections()
			r := p.Requests()[0]
			stop := make(chan struct{})
			time.AfterFunc(time.Second, func() { close(stop) })
			ok, failed := gatewayLoad(t, client, d.GatewayURL(), r, 4, stop)
			if failed > 0 || ok < 60 {
				t.Fatalf("%d calls ok, %d failed", ok, failed)
			}
			if err := d.Scale(ctx, "hop1+hop2+hop3", 3); err != nil {
				t.Fatal(err)
			}
			stop2 := make(chan struct{})
			time.AfterFunc(time.Second, func() { close(stop2) })
			ok2, failed2 := gatewayLoad(t, client, d.GatewayURL(), r, 4, stop2)
			if failed2 > 0 {
				t.Fatalf("%d calls failed after the scale up", failed2)
			}
			procs := d.Processes()
			if err := d.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if len(procs) != 3 {
				t.Fatalf("processes %v", procs)
			}
			share := float64(ok)/2 + float64(ok2)/3
			for i, pr := range procs[:2] {
				if n := served(t, pr); float64(n) < 0.9*share || float64(n) > 1.1*share+5 {
					t.Errorf("replica %d served %d calls, want %.0f ± 10%% (%d + %d calls in all)", i, n, share, ok, ok2)
				}
			}
			if n := served(t, procs[2]); float64(n) < 0.9*float64(ok2)/3 || float64(n) > 1.1*float64(ok2)/3+5 {
				t.Errorf("the replica added by Scale served %d of the last %d calls, want a third ± 10%%", n, ok2)
			}
		})
	}
}
