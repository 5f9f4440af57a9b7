package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"
)

// A run whose target stops answering for 1.5 s in its window is recorded
// ok, and `svclab run` names the stall as the run ends and counts it at
// the end of the experiment.
func TestRunNamesAStall(t *testing.T) {
	var (
		mu    sync.Mutex
		n     int
		until time.Time
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		// 300 ms of warm-up and 1 s of the window at 100/s, then every
		// request waits until 1.5 s after the 130th.
		if n == 130 {
			until = time.Now().Add(1500 * time.Millisecond)
		}
		wait := time.Until(until)
		mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	spec := fmt.Sprintf(`
[app]
name = "chain"
hops = 1

[load]
target = %q
rate = 100
arrival = "constant"
connections = 400
warmup = "300ms"
duration = "3s"

[experiment]
name = "stall"
seed = 1
`, srv.URL+"/")
	_, stderr := runExperiment(t, "stall", spec, 1)
	if !regexp.MustCompile(`run 1/1 \S+ stalled: no answer for 1\.[4-8] s from T\+(0\.[89]|1\.[0-3]) s`).MatchString(stderr) {
		t.Errorf("no line naming the stall of about 1.5 s from T+1 s:\n%s", stderr)
	}
	if !regexp.MustCompile(`stopped answering for a second or more in 1 of 1 ok runs \(stalled\)`).MatchString(stderr) {
		t.Errorf("no count of stalled runs at the end:\n%s", stderr)
	}
}
