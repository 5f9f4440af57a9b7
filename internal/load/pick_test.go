package load

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPickTemplate(t *testing.T) {
	tm := compileTmpl("/product/{{pick:A|B|C}}?u={{user}}&q={{ pick:1|10}}")
	s := &Session{User: 7, Rand: rand.New(rand.NewPCG(1, 2))}
	seen := map[string]int{}
	for range 3000 {
		got := tm.render(s)
		path, q, ok := strings.Cut(got, "?")
		if !ok || (q != "u=7&q=1" && q != "u=7&q=10") {
			t.Fatalf("rendered %q", got)
		}
		seen[path]++
	}
	// Uniform over three choices: each near 1000 (binomial sd ≈ 26, so
	// ±150 is about six sd).
	for _, c := range []string{"A", "B", "C"} {
		if n := seen["/product/"+c]; n < 850 || n > 1150 {
			t.Errorf("choice %s picked %d times of 3000, want about 1000 (%v)", c, n, seen)
		}
	}
	if len(seen) != 3 {
		t.Errorf("picked %v, want only A, B and C", seen)
	}
	// The same seed picks the same sequence.
	a := &Session{Rand: rand.New(rand.NewPCG(5, 5))}
	b := &Session{Rand: rand.New(rand.NewPCG(5, 5))}
	for range 50 {
		if x, y := tm.render(a), tm.render(b); x != y {
			t.Fatalf("same seed rendered %q and %q", x, y)
		}
	}
}

func TestPickErrors(t *testing.T) {
	cfg := decodeConfig(t, `
[flow]
[[flow.steps]]
path = "/product/{{pick:A||B}}"
`)
	cfg.Target, cfg.Rate = "http://127.0.0.1:1", 1
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "flow.steps[0].path") || !strings.Contains(err.Error(), "empty choice") {
		t.Fatalf("Validate() = %v, want an empty-choice error at flow.steps[0].path", err)
	}
}

// TestPickInFlow: every request of a run renders its own pick, so a
// server sees every choice, and form bodies arrive as forms.
func TestPickInFlow(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path+" "+r.FormValue("currency_code")]++
		mu.Unlock()
	}))
	defer srv.Close()
	cfg := decodeConfig(t, `
[flow]
name = "browse"
[[flow.steps]]
path = "/product/{{pick:X|Y}}"
[[flow.steps]]
method = "POST"
path = "/setCurrency"
body = "currency_code={{pick:EUR|JPY}}"
headers = { Content-Type = "application/x-www-form-urlencoded" }
`)
	cfg.Target, cfg.Rate, cfg.Duration = srv.URL, 100, Duration(time.Second)
	res := run(t, cfg, Options{})
	if f := mustOp(t, res, "browse"); f.Errors != 0 || f.Count < 50 {
		t.Fatalf("flow: %+v", f)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"/product/X ", "/product/Y ", "/setCurrency EUR", "/setCurrency JPY"} {
		if got[k] == 0 {
			t.Errorf("server never saw %q: %v", k, got)
		}
	}
}
