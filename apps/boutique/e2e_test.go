package boutique_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/apps/boutique"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/deploy/backing/redis"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/load"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
	pb "github.com/svclab/svclab/proto/boutique"
)

// TestMain lets the deployer re-execute this test binary as a host.
func TestMain(m *testing.M) {
	hostentry.RunIfChild()
	os.Exit(m.Run())
}

func loadSpec(t testing.TB, src string) *spec.Spec {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func up(t *testing.T, ctx context.Context, pool *backing.Pool, s *spec.Spec) deploy.Deployment {
	t.Helper()
	_, topo, err := deploy.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := local.Deploy(ctx, topo, local.Options{Options: deploy.Options{Backing: pool}})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return d
}

func newPool(t testing.TB) *backing.Pool {
	t.Helper()
	pool := backing.NewPool(nil)
	t.Cleanup(func() {
		if err := pool.Close(context.Background()); err != nil {
			t.Errorf("close pool: %v", err)
		}
	})
	return pool
}

// browser is a client with a cookie jar, as a person's browser.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// do sends a request and returns the final page (redirects followed, as a
// browser and Locust do), failing the test on a status other than want.
func (b *browser) do(method, path string, form url.Values, want int) string {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.t.Fatalf("%s %s: %s, want %d:\n%s", method, path, resp.Status, want, page)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		b.t.Fatalf("%s %s: Content-Type %q, want HTML", method, path, ct)
	}
	return string(page)
}

func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// attr returns every value of data-NAME on elements matching the id or
// class marker.
func attr(page, marker, name string) []string {
	re := regexp.MustCompile(marker + `[^>]*data-` + name + `="([^"]*)"`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

func one(t *testing.T, page, marker, name string) string {
	t.Helper()
	v := attr(page, marker, name)
	if len(v) != 1 {
		t.Fatalf("%d values of data-%s at %s, want 1:\n%s", len(v), name, marker, page)
	}
	return v[0]
}

// The expected prices: the catalogue's USD prices converted through the
// euro with currency_conversion.json's rates, exact and floored to a nano
// (Python, fractions.Fraction), then shown to the cent as the pages do.
//
//	Sunglasses (OLJCESPC7Z) 19.99 USD, Tank Top (66VCHSJNUP) 18.99 USD,
//	shipping 8.99 USD; the cart holds 2 Sunglasses and 3 Tank Tops.
var wantPrices = map[string]struct{ sunglasses, lineSun, lineTank, total string }{
	"EUR": {"EUR 17.68", "EUR 35.36", "EUR 50.39", "EUR 93.71"},
	"JPY": {"JPY 2235.06", "JPY 4470.12", "JPY 6369.75", "JPY 11845.03"},
}

// scriptedUser is S0's user with every answer checked: the home page,
// the currency changed twice, ten product pages, two adds, three views of
// the cart and a checkout.
func scriptedUser(t *testing.T, base, currency string) {
	b := newBrowser(t, base)
	home := b.do("GET", "/", nil, 200)
	if ids := attr(home, `class="product"`, "id"); len(ids) != 9 {
		t.Fatalf("home page lists %d products, want 9", len(ids))
	}
	if one(t, home, `id="cart-size"`, "cart-size") != "0" {
		t.Fatal("a new session's cart is not empty")
	}
	if b.cookie(boutique.SessionCookie) == "" {
		t.Fatalf("no %s cookie after the home page", boutique.SessionCookie)
	}
	other := map[string]string{"EUR": "JPY", "JPY": "EUR"}[currency]
	for _, cur := range []string{other, currency} {
		page := b.do("POST", "/setCurrency", url.Values{"currency_code": {cur}}, 200)
		if got := attr(page, `class="price"`, "price"); len(got) != 9 || !strings.HasPrefix(got[0], cur+" ") {
			t.Fatalf("after choosing %s the home page's prices are %v", cur, got)
		}
	}
	products := []string{"OLJCESPC7Z", "66VCHSJNUP", "1YMWWN1N4O", "L9ECAV7KIM", "2ZYFJ3GM2N", "0PUK6V6EV0", "LS4PSXUNUM", "9SIQT8TOJO", "6E92ZMYYFZ", "OLJCESPC7Z"}
	for _, id := range products {
		page := b.do("GET", "/product/"+id, nil, 200)
		if got := one(t, page, `id="product"`, "id"); got != id {
			t.Fatalf("product page of %s shows %s", id, got)
		}
		if id == "OLJCESPC7Z" {
			if got := one(t, page, `class="price"`, "price"); got != wantPrices[currency].sunglasses {
				t.Fatalf("Sunglasses cost %s, want %s", got, wantPrices[currency].sunglasses)
			}
		}
		if recs := strings.Count(page, `<li><a href="/product/`); recs != boutique.MaxPageRecommendations || strings.Contains(page, `<li><a href="/product/`+id+`"`) {
			t.Fatalf("product page of %s: %d recommendations (want 4, none of itself)", id, recs)
		}
	}
	b.do("GET", "/product/NOSUCHPROD", nil, 404)
	b.do("POST", "/cart", url.Values{"product_id": {"OLJCESPC7Z"}, "quantity": {"2"}}, 200)
	b.do("POST", "/cart", url.Values{"product_id": {"66VCHSJNUP"}, "quantity": {"3"}}, 200)
	b.do("POST", "/cart", url.Values{"product_id": {"66VCHSJNUP"}, "quantity": {"0"}}, 400)
	b.do("POST", "/cart", url.Values{"product_id": {"NOSUCHPROD"}, "quantity": {"1"}}, 404)
	for range 3 {
		page := b.do("GET", "/cart", nil, 200)
		if got := one(t, page, `id="cart-size"`, "cart-size"); got != "5" {
			t.Fatalf("cart size %s, want 5", got)
		}
		ids, qs, prices := attr(page, `class="line"`, "id"), attr(page, `class="line"`, "quantity"), attr(page, `class="line"`, "price")
		if strings.Join(ids, " ") != "66VCHSJNUP OLJCESPC7Z" || strings.Join(qs, " ") != "3 2" {
			t.Fatalf("cart holds %v × %v, want 66VCHSJNUP × 3 and OLJCESPC7Z × 2", ids, qs)
		}
		w := wantPrices[currency]
		if prices[0] != w.lineTank || prices[1] != w.lineSun {
			t.Fatalf("cart lines cost %v, want %s and %s", prices, w.lineTank, w.lineSun)
		}
		if got := one(t, page, `id="total"`, "price"); got != w.total {
			t.Fatalf("cart total %s, want %s", got, w.total)
		}
	}
	// A card that fails the Luhn check is refused, and the cart is kept.
	bad := checkoutForm()
	bad.Set("credit_card_number", "4432-8015-6152-0455")
	if page := b.do("POST", "/cart/checkout", bad, 400); !strings.Contains(page, "Credit card info is invalid") {
		t.Fatalf("a bad card's error page does not say why:\n%s", page)
	}
	order := b.do("POST", "/cart/checkout", checkoutForm(), 200)
	id := one(t, order, `id="order-id"`, "id")
	if !strings.HasPrefix(id, "order-") {
		t.Fatalf("order id %q, want order-N (app.order_ids = sequence)", id)
	}
	if got := one(t, order, `id="total-paid"`, "price"); got != wantPrices[currency].total {
		t.Fatalf("order total %s, want %s", got, wantPrices[currency].total)
	}
	if items := attr(order, `class="item"`, "quantity"); strings.Join(items, " ") != "3 2" {
		t.Fatalf("order items' quantities %v, want 3 and 2", items)
	}
	if page := b.do("GET", "/cart", nil, 200); !strings.Contains(page, `id="empty"`) {
		t.Fatal("the cart is not empty after the order")
	}
}

func checkoutForm() url.Values {
	return url.Values{
		"email": {"someone@example.com"}, "street_address": {"1600 Amphitheatre Parkway"}, "zip_code": {"94043"},
		"city": {"Mountain View"}, "state": {"CA"}, "country": {"United States"},
		"credit_card_number": {"4432-8015-6152-0454"}, "credit_card_expiration_month": {"1"},
		"credit_card_expiration_year": {strconv.Itoa(time.Now().Year() + 1)}, "credit_card_cvv": {"672"},
	}
}

// TestScriptedUser drives boutique's HTML frontend as S0's user, checking
// every answer, on both cart stores, in the monolith and split over grpc
// and http.
func TestScriptedUser(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys boutique; skipped with -short")
	}
	pool := newPool(t)
	cases := []struct{ store, placement, transport, currency string }{
		{"memory", "monolith", "grpc", "EUR"},
		{"memory", "split", "grpc", "JPY"},
		{"memory", "split", "http", "EUR"},
		{"redis", "monolith", "http", "JPY"},
		{"redis", "split", "grpc", "EUR"},
		{"redis", "split", "http", "JPY"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", c.store, c.placement, c.transport), func(t *testing.T) {
			if c.store == "redis" {
				if err := redis.Check(); err != nil {
					t.Skipf("Redis cannot run here (install Debian's redis-server; .ci/run does): %v", err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			d := up(t, ctx, pool, loadSpec(t, fmt.Sprintf(`[app]
name = "boutique"
cart_store = %q
order_ids = "sequence"
[deploy]
transport = %q
placement = %q
`, c.store, c.transport, c.placement)))
			want := map[string]int{"monolith": 1, "split": 11}[c.placement]
			if n := len(d.Processes()); n != want {
				t.Fatalf("%d processes, want %d", n, want)
			}
			scriptedUser(t, d.GatewayURL(), c.currency)
			// The RPC face answers alike, over the deployment's transport.
			conn, err := d.Dial(ctx, transport.DialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, r := range d.Topology().Requests() {
				if _, err := r.Invoke(ctx, conn); err != nil {
					t.Errorf("default request %s: %v", r.Name, err)
				}
			}
			fe := pb.NewFrontendClient(conn)
			if _, err := fe.AddToCart(ctx, &pb.AddItemRequest{UserId: "rpc", Item: &pb.CartItem{ProductId: "OLJCESPC7Z", Quantity: 2}}); err != nil {
				t.Fatal(err)
			}
			o, err := fe.PlaceOrder(ctx, boutique.DefaultOrder("rpc", "EUR"))
			if err != nil {
				t.Fatal(err)
			}
			// 2 × 17.682441397 + 7.952233524 EUR, exactly.
			if m := o.GetTotalPaid(); m.GetCurrencyCode() != "EUR" || m.GetUnits() != 43 || m.GetNanos() != 317116318 {
				t.Errorf("RPC order total %v, want EUR 43.317116318", m)
			}
		})
	}
}

// TestRedisFlushedPerDeployment: every deployment of one pool shares the
// Redis server, and each starts with no carts, because the pool flushes it.
func TestRedisFlushedPerDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("deploys boutique; skipped with -short")
	}
	if err := redis.Check(); err != nil {
		t.Skipf("Redis cannot run here: %v", err)
	}
	pool := newPool(t)
	src := `[app]
name = "boutique"
cart_store = "redis"
[deploy]
transport = "grpc"
placement = "monolith"
`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 2 {
		d := up(t, ctx, pool, loadSpec(t, src))
		conn, err := d.Dial(ctx, transport.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fe := pb.NewFrontendClient(conn)
		page, err := fe.ViewCart(ctx, &pb.PageRequest{SessionId: "ann"})
		if err != nil {
			t.Fatal(err)
		}
		if page.GetCartSize() != 0 {
			t.Fatalf("deployment %d starts with %d units in ann's cart, want a flushed store", i, page.GetCartSize())
		}
		if _, err := fe.AddToCart(ctx, &pb.AddItemRequest{UserId: "ann", Item: &pb.CartItem{ProductId: "6E92ZMYYFZ", Quantity: 4}}); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if err := d.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(pool.Servers()); n != 1 {
		t.Errorf("%d backing servers, want the one Redis", n)
	}
}

// TestLocustFlow runs experiments/boutique-flow.toml's weighted flow (the
// original load script's tasks) against a split deployment for a few
// seconds: every task is run and none fails.
func TestLocustFlow(t *testing.T) {
	ops := runFlow(t, "boutique-flow.toml", nil, 300)
	for _, name := range []string{"index", "setCurrency", "browseProduct", "addToCart", "viewCart", "checkout", "locust-user"} {
		if op, ok := ops[name]; !ok || op.Count == 0 || op.Errors != 0 {
			t.Errorf("%s: %+v, want requests and no errors", name, op)
		}
	}
	// browseProduct has weight 10 of 19; in 300 iterations its share is
	// within ±0.1 of 10/19 (3.4 binomial standard deviations).
	if f, b := ops["locust-user"].Count, ops["browseProduct"].Count; f < 300 || abs(float64(b)/float64(f)-10.0/19) > 0.1 {
		t.Errorf("browseProduct %d of %d iterations, want about 10/19", b, f)
	}
}

// TestS0Flow runs experiments/s0-boutique.toml's ordered flow (S0's
// scripted user) in placement (c): every step of every iteration answers.
func TestS0Flow(t *testing.T) {
	ops := runFlow(t, "s0-boutique.toml", map[string]any{"deploy.placement": "c"}, 20)
	f := ops["s0-user"]
	if f.Count == 0 || f.Errors != 0 {
		t.Fatalf("flow: %+v", f)
	}
	for name, op := range ops {
		// A step's count is the iterations that reached it: at least those
		// that completed, as none failed.
		if op.Kind == "request" && (op.Errors != 0 || op.Count < f.Count) {
			t.Errorf("step %s: %d requests, %d errors; want ≥ %d and none", name, op.Count, op.Errors, f.Count)
		}
	}
	if n := len(ops); n != 19+2 {
		t.Errorf("%d operations, want 19 steps, the flow and total", n)
	}
}

// runFlow deploys an experiment spec (with levels set) and runs n
// iterations of its [load] flow with 8 busy users (at most a minute, so a
// loaded machine slows the test rather than failing it), returning its
// operations by name.
func runFlow(t *testing.T, file string, levels map[string]any, n int64) map[string]load.Operation {
	t.Helper()
	if testing.Short() {
		t.Skip("deploys boutique; skipped with -short")
	}
	s, err := spec.Load(filepath.Join("..", "..", "experiments", file))
	if err != nil {
		t.Fatal(err)
	}
	if levels != nil {
		if s, err = s.With(levels); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := up(t, ctx, newPool(t), s)
	var cfg load.Config
	if err := s.Decode("load", &cfg); err != nil {
		t.Fatal(err)
	}
	// Short and busy: the flow's steps are what is tested.
	cfg.Target = d.GatewayURL()
	cfg.Users, cfg.ThinkMin, cfg.ThinkMax = 8, load.Duration(time.Millisecond), load.Duration(5*time.Millisecond)
	cfg.Warmup, cfg.Duration, cfg.Requests = 0, load.Duration(time.Minute), n
	cfg.Seed = 12
	tg, err := load.NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := load.Run(ctx, cfg, tg, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	ops := map[string]load.Operation{}
	for _, op := range res.Summary.Operations {
		ops[op.Name] = op
	}
	return ops
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
