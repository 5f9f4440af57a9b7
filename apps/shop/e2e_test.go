package shop_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/svclab/svclab/apps/shop"
	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/backing"
	"github.com/svclab/svclab/internal/deploy/backing/postgres"
	"github.com/svclab/svclab/internal/deploy/hostentry"
	"github.com/svclab/svclab/internal/deploy/local"
	"github.com/svclab/svclab/internal/runtime"
	"github.com/svclab/svclab/internal/runtime/transport"
	_ "github.com/svclab/svclab/internal/runtime/transport/all"
	"github.com/svclab/svclab/internal/spec"
	shoppb "github.com/svclab/svclab/proto/shop"
)

// TestMain lets the deployer re-execute this test binary as a host.
func TestMain(m *testing.M) {
	hostentry.RunIfChild()
	os.Exit(m.Run())
}

func needPostgres(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL; skipped with -short")
	}
	if err := postgres.Check(); err != nil {
		t.Skipf("PostgreSQL cannot run here (install Debian's postgresql; .ci/run does): %v", err)
	}
}

func resolve(t *testing.T, src string) *runtime.Topology {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, topo, err := deploy.Resolve(s)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// up deploys a shop and returns a client of its gateway over the
// deployment's transport.
func up(t *testing.T, ctx context.Context, pool *backing.Pool, src string) (deploy.Deployment, shoppb.GatewayClient) {
	t.Helper()
	topo := resolve(t, src)
	d, err := local.Deploy(ctx, topo, local.Options{Options: deploy.Options{Backing: pool}})
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	conn, err := d.Dial(ctx, transport.DialOptions{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return d, shoppb.NewGatewayClient(conn)
}

func newPool(t *testing.T) *backing.Pool {
	t.Helper()
	pool := backing.NewPool(nil)
	t.Cleanup(func() {
		if err := pool.Close(context.Background()); err != nil {
			t.Errorf("close pool: %v", err)
		}
	})
	return pool
}

// TestShop drives every operation over grpc and http, split into three
// processes, through the transport's client and through the HTTP gateway.
func TestShop(t *testing.T) {
	needPostgres(t)
	pool := newPool(t)
	for _, tr := range []string{"grpc", "http"} {
		t.Run(tr, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			d, gw := up(t, ctx, pool, fmt.Sprintf(`[app]
name = "shop"
products = 50
stock = 5
pool_size = 4
[deploy]
transport = %q
placement = "split"
`, tr))
			if n := len(d.Processes()); n != 3 {
				t.Fatalf("%d processes, want gateway, products and orders apart", n)
			}
			conn, err := d.Dial(ctx, transport.DialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, r := range d.Topology().Requests() {
				if _, err := r.Invoke(ctx, conn); err != nil {
					t.Errorf("default request %s: %v", r.Name, err)
				}
				body := r.JSON()
				resp, err := http.Post(d.GatewayURL()+r.Method, "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatalf("gateway %s: %v", r.Name, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("gateway %s: %s: %s", r.Name, resp.Status, b)
					continue
				}
				m := r.NewResponse()
				if err := protojson.Unmarshal(b, m); err != nil {
					t.Errorf("gateway %s: %v in %s", r.Name, err, b)
				} else if err := r.Check(m); err != nil {
					t.Errorf("gateway %s: %v", r.Name, err)
				}
			}

			page, err := gw.ListProducts(ctx, &shoppb.ListProductsRequest{Limit: 10, Offset: 45})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(page.GetProducts()); got != 5 || page.GetProducts()[0].GetId() != 46 {
				t.Fatalf("page from offset 45 of 50: %v", page)
			}
			before, err := gw.GetProduct(ctx, &shoppb.GetProductRequest{Id: 7})
			if err != nil {
				t.Fatal(err)
			}
			if before.GetName() != "product-7" || before.GetPriceCents() != shop.PriceOf(7) {
				t.Fatalf("product 7: %v, want the seeded name and price %d", before, shop.PriceOf(7))
			}
			o, err := gw.CreateOrder(ctx, &shoppb.CreateOrderRequest{ProductId: 7, Quantity: 2, Customer: "ann"})
			if err != nil {
				t.Fatal(err)
			}
			if o.GetTotalCents() != 2*shop.PriceOf(7) || o.GetCustomer() != "ann" {
				t.Fatalf("order %v: want 2 × %d cents for ann", o, shop.PriceOf(7))
			}
			after, err := gw.GetProduct(ctx, &shoppb.GetProductRequest{Id: 7})
			if err != nil {
				t.Fatal(err)
			}
			if after.GetStock() != before.GetStock()-2 {
				t.Fatalf("stock %d after ordering 2 of %d", after.GetStock(), before.GetStock())
			}
			list, err := gw.ListOrders(ctx, &shoppb.ListOrdersRequest{Customer: "ann"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.GetOrders()) != 1 || list.GetOrders()[0].GetId() != o.GetId() {
				t.Fatalf("ann's orders: %v, want only %v", list, o)
			}

			for _, c := range []struct {
				name string
				call func() error
				code codes.Code
			}{
				{"more than the stock", func() error {
					_, err := gw.CreateOrder(ctx, &shoppb.CreateOrderRequest{ProductId: 7, Quantity: 4})
					return err
				}, codes.FailedPrecondition},
				{"unknown product", func() error {
					_, err := gw.GetProduct(ctx, &shoppb.GetProductRequest{Id: 51})
					return err
				}, codes.NotFound},
				{"order of an unknown product", func() error {
					_, err := gw.CreateOrder(ctx, &shoppb.CreateOrderRequest{ProductId: 51, Quantity: 1})
					return err
				}, codes.NotFound},
				{"zero quantity", func() error {
					_, err := gw.CreateOrder(ctx, &shoppb.CreateOrderRequest{ProductId: 1})
					return err
				}, codes.InvalidArgument},
				{"limit too large", func() error {
					_, err := gw.ListProducts(ctx, &shoppb.ListProductsRequest{Limit: 101})
					return err
				}, codes.InvalidArgument},
			} {
				if got := status.Code(c.call()); got != c.code {
					t.Errorf("%s: code %v, want %v", c.name, got, c.code)
				}
			}
		})
	}
}

// TestResetMakesRunsIndependent deploys twice on one pool, as an
// experiment's runs do: what the first run wrote is gone in the second.
func TestResetMakesRunsIndependent(t *testing.T) {
	needPostgres(t)
	pool := newPool(t)
	src := "[app]\nname = \"shop\"\nproducts = 10\nstock = 3\n[deploy]\ntransport = \"grpc\"\nplacement = \"monolith\"\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var pids []int
	for run := range 2 {
		d, gw := up(t, ctx, pool, src)
		if p, err := gw.GetProduct(ctx, &shoppb.GetProductRequest{Id: 1}); err != nil || p.GetStock() != 3 {
			t.Fatalf("run %d: product 1 at start: %v, %v; want the seeded stock 3", run, p, err)
		}
		if l, err := gw.ListOrders(ctx, &shoppb.ListOrdersRequest{}); err != nil || len(l.GetOrders()) != 0 {
			t.Fatalf("run %d: orders at start: %v, %v; want none", run, l, err)
		}
		for range 3 {
			if _, err := gw.CreateOrder(ctx, &shoppb.CreateOrderRequest{ProductId: 1, Quantity: 1}); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
		}
		pids = append(pids, pool.Servers()...)
		if err := d.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(pids) != 2 || pids[0] != pids[1] {
		t.Errorf("server pids per run %v: want one server kept across runs", pids)
	}
}

// TestOrdersNeverOversell sends more concurrent orders for one product
// than it has stock, through a pool of 8 connections: exactly the stock is
// sold, and every other order is refused as FailedPrecondition.
func TestOrdersNeverOversell(t *testing.T) {
	needPostgres(t)
	pool := newPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const stock, orders = 10, 60
	_, gw := up(t, ctx, pool, fmt.Sprintf("[app]\nname = \"shop\"\nproducts = 3\nstock = %d\npool_size = 8\n[deploy]\ntransport = \"grpc\"\nplacement = \"split\"\n", stock))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		byCode  = map[codes.Code]int{}
		start   = make(chan struct{})
		unknown []error
	)
	for range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := gw.CreateOrder(ctx, &shoppb.CreateOrderRequest{ProductId: 2, Quantity: 1, Customer: "race"})
			mu.Lock()
			defer mu.Unlock()
			byCode[status.Code(err)]++
			if c := status.Code(err); c != codes.OK && c != codes.FailedPrecondition {
				unknown = append(unknown, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(unknown) > 0 {
		t.Fatalf("unexpected errors: %v", unknown)
	}
	if byCode[codes.OK] != stock || byCode[codes.FailedPrecondition] != orders-stock {
		t.Fatalf("outcomes %v: want %d sold and %d refused", byCode, stock, orders-stock)
	}
	p, err := gw.GetProduct(ctx, &shoppb.GetProductRequest{Id: 2})
	if err != nil || p.GetStock() != 0 {
		t.Fatalf("product 2 after the race: %v, %v; want stock 0", p, err)
	}
	l, err := gw.ListOrders(ctx, &shoppb.ListOrdersRequest{Customer: "race", Limit: 100})
	if err != nil || len(l.GetOrders()) != stock {
		t.Fatalf("recorded orders: %d, %v; want %d", len(l.GetOrders()), err, stock)
	}
}

// TestIngressNginx puts Debian's nginx in front of the gateway
// (app.ingress = "nginx"): the deployment's gateway URL is nginx's, and
// answers come through it.
func TestIngressNginx(t *testing.T) {
	needPostgres(t)
	if _, err := exec.LookPath("nginx"); err != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is missing (.ci/run installs it)")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, _ := up(t, ctx, newPool(t), "[app]\nname = \"shop\"\nproducts = 5\ningress = \"nginx\"\n[deploy]\ntransport = \"grpc\"\nplacement = \"split\"\n")
	if gw := "http://" + d.(*local.Deployment).Gateway().Addr; d.GatewayURL() == gw {
		t.Fatalf("gateway URL %s is svclab's own gateway, not the ingress", gw)
	}
	resp, err := http.Post(d.GatewayURL()+shoppb.Gateway_GetProduct_FullMethodName, "application/json", bytes.NewReader([]byte(`{"id":"3"}`)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var p shoppb.Product
	if err := protojson.Unmarshal(b, &p); err != nil || p.GetName() != "product-3" {
		t.Fatalf("product 3 through nginx: %s %s (%v)", resp.Status, b, err)
	}
	if srv := resp.Header.Get("Server"); !strings.HasPrefix(srv, "nginx") {
		t.Errorf("Server header %q: the answer did not come through nginx", srv)
	}
}

// TestMissingPostgres: without PostgreSQL, the spec is refused before
// anything starts, at app.name's line, saying what to install.
func TestMissingPostgres(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := postgres.SearchGlob
	postgres.SearchGlob = filepath.Join(t.TempDir(), "*", "bin")
	defer func() { postgres.SearchGlob = old }()
	path := filepath.Join(t.TempDir(), "spec.toml")
	if err := os.WriteFile(path, []byte("[app]\nname = \"shop\"\n[deploy]\ntransport = \"grpc\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = deploy.Resolve(s)
	if err == nil {
		t.Fatal("a shop spec resolved without PostgreSQL")
	}
	for _, want := range []string{path + ":2", "app.name", `app shop needs PostgreSQL for its backing service "db"`, "apt-get install postgresql"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	t.Log(err)
}

// TestDeploymentWithoutPool: a deployment given no pool (svclab up) starts
// its own database server and stops it, directory and all, with itself.
func TestDeploymentWithoutPool(t *testing.T) {
	needPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), postgres.DirPrefix+strconv.Itoa(os.Getpid())+"-*"))
	d, gw := up(t, ctx, nil, "[app]\nname = \"shop\"\nproducts = 5\n[deploy]\ntransport = \"http\"\nplacement = \"monolith\"\n")
	if p, err := gw.GetProduct(ctx, &shoppb.GetProductRequest{Id: 5}); err != nil || p.GetName() != "product-5" {
		t.Fatalf("product 5: %v, %v", p, err)
	}
	during, _ := filepath.Glob(filepath.Join(os.TempDir(), postgres.DirPrefix+strconv.Itoa(os.Getpid())+"-*"))
	if len(during) != len(before)+1 {
		t.Fatalf("clusters of this process before %v, while deployed %v: want one more", before, during)
	}
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), postgres.DirPrefix+strconv.Itoa(os.Getpid())+"-*"))
	if len(after) != len(before) {
		t.Errorf("clusters after Stop %v, want as before %v", after, before)
	}
}
