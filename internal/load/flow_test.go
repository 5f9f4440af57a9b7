package load

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// shopServer is a tiny stateful shop: login hands out a token and a
// session cookie, /cart needs the token and returns a cart id, and
// checkout needs the cookie and that user's cart id.
func shopServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	var n atomic.Int64
	carts := map[string]string{}    // token -> cart id
	sessions := map[string]string{} // session cookie -> token
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		id := n.Add(1)
		tok, sess := fmt.Sprintf("tok-%d", id), fmt.Sprintf("sess-%d", id)
		mu.Lock()
		sessions[sess] = tok
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: sess, Path: "/"})
		json.NewEncoder(w).Encode(map[string]any{"user": map[string]any{"token": tok}})
	})
	mux.HandleFunc("GET /cart", func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		_, ok := findToken(sessions, tok)
		cart := "c-" + tok
		carts[tok] = cart
		mu.Unlock()
		if !ok {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"items": []any{map[string]any{"cart": cart}}})
	})
	mux.HandleFunc("POST /checkout/{cart}", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("session")
		if err != nil {
			http.Error(w, "no session", http.StatusForbidden)
			return
		}
		mu.Lock()
		tok := sessions[c.Value]
		ok := tok != "" && carts[tok] == r.PathValue("cart")
		mu.Unlock()
		if !ok {
			http.Error(w, "not your cart", http.StatusConflict)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func findToken(sessions map[string]string, tok string) (string, bool) {
	for s, t := range sessions {
		if t == tok {
			return s, true
		}
	}
	return "", false
}

const shopFlow = `
[flow]
name = "checkout"
[[flow.steps]]
name = "login"
method = "POST"
path = "/login"
extract = { token = "json:user.token" }
[[flow.steps]]
path = "/cart"
headers = { Authorization = "Bearer {{token}}" }
extract = { cart = "json:items.0.cart" }
[[flow.steps]]
name = "checkout"
method = "POST"
path = "/checkout/{{cart}}"
expect_status = 201
`

func TestFlow(t *testing.T) {
	srv := shopServer(t)
	for _, mode := range []Mode{Open, Closed} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := decodeConfig(t, shopFlow)
			cfg.Target, cfg.Mode, cfg.Duration = srv.URL, mode, Duration(1500*time.Millisecond)
			if mode == "open" {
				cfg.Rate = 50
			} else {
				cfg.Users, cfg.ThinkTime = 3, Duration(10*time.Millisecond)
			}
			if err := cfg.Validate(); err == nil {
				t.Fatal("a step named like the flow must be refused")
			}
			cfg.Flow.Name = "shop"
			res := run(t, cfg, Options{})
			flow := mustOp(t, res, "shop")
			if flow.Kind != "flow" || flow.Count < 20 || flow.Errors != 0 {
				t.Fatalf("flow: %+v", flow)
			}
			for _, name := range []string{"login", "GET /cart", "checkout"} {
				op := mustOp(t, res, name)
				if op.Kind != "request" || op.Count != flow.Count || op.Errors != 0 {
					t.Errorf("step %s: kind %s count %d errors %d %v, want %d requests and no error",
						name, op.Kind, op.Count, op.Errors, op.ErrorsByClass, flow.Count)
				}
				if op.Latency.P50Ms > flow.Latency.P50Ms {
					t.Errorf("step %s p50 %.3f ms > flow p50 %.3f ms", name, op.Latency.P50Ms, flow.Latency.P50Ms)
				}
			}
			if tot := mustOp(t, res, "total"); tot.Count != 3*flow.Count {
				t.Errorf("total counts %d requests, want 3 × %d", tot.Count, flow.Count)
			}
		})
	}
}

// TestFlowErrors: a step that fails ends its iteration and is classed.
func TestFlowErrors(t *testing.T) {
	srv := shopServer(t)
	cfg := decodeConfig(t, strings.Replace(shopFlow, `"Bearer {{token}}"`, `"Bearer nobody"`, 1))
	cfg.Target, cfg.Rate, cfg.Duration = srv.URL, 40, Duration(time.Second)
	cfg.Flow.Name = "shop"
	res := run(t, cfg, Options{})
	cart := mustOp(t, res, "GET /cart")
	if cart.Errors != cart.Count || cart.ErrorsByClass["http_401"] != cart.Count {
		t.Fatalf("cart with a bad token: %+v", cart)
	}
	if co := mustOp(t, res, "checkout"); co.Count != 0 {
		t.Fatalf("checkout ran after a failed step: %+v", co)
	}
	if f := mustOp(t, res, "shop"); f.Errors != f.Count || f.ErrorsByClass["http_401"] != f.Count {
		t.Fatalf("the flow must fail with its failed step's class: %+v", f)
	}
}
