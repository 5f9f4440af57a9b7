// Package shop is the shop reference app (S1's system): an e-commerce
// backend with an entry gateway, a products service that reads the
// catalogue and an orders service that checks stock and records orders,
// each in one transaction. Products and orders share one PostgreSQL
// database, a backing service (svc.Backing) that the deployer runs and
// resets to the seeded catalogue before every run; the app only connects
// to it, through a pgx pool of app.pool_size connections per process.
package shop

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	shoppb "github.com/svclab/svclab/proto/shop"

	"github.com/svclab/svclab/svc"
)

// Name is the app.name of this app.
const Name = "shop"

// Component names.
const (
	Gateway  = "gateway"
	Products = "products"
	Orders   = "orders"
)

// DB is the name of the shop's backing database.
const DB = "db"

// Values of app.op, the default requests.
const (
	OpAll    = "all"
	OpList   = "list"
	OpGet    = "get"
	OpOrder  = "order"
	OpOrders = "orders"
)

// IngressNginx is the value of app.ingress that puts Debian's nginx in
// front of the gateway.
const IngressNginx = "nginx"

// Bounds of the keys.
const (
	MaxProducts = 1_000_000
	MaxPoolSize = 100
	// DefaultLimit and MaxLimit bound a page of a list call.
	DefaultLimit = 20
	MaxLimit     = 100
)

func init() {
	svc.Register(&svc.App{
		Name:    Name,
		Summary: "e-commerce backend: gateway, products and orders on a shared PostgreSQL (S1)",
		NewConfig: func() svc.Config {
			return &Config{Products: 1000, Stock: 1_000_000, PoolSize: 10, Op: OpAll}
		},
	})
}

// Config is the [app] table of a shop spec.
type Config struct {
	// Products is the size of the seeded catalogue, ids 1..Products.
	Products int `toml:"products" json:"products"`
	// Stock is every product's units at the start of a run.
	Stock int64 `toml:"stock" json:"stock"`
	// PoolSize is the most connections each products or orders process
	// holds to the database (pgxpool's MaxConns).
	PoolSize int `toml:"pool_size" json:"pool_size"`
	// Op chooses the default requests: one operation, or all four mixed.
	Op string `toml:"op" json:"op"`
	// Ingress, when "nginx", serves the gateway through nginx.
	Ingress string `toml:"ingress" json:"ingress"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	if c.Products < 1 || c.Products > MaxProducts {
		errs = append(errs, svc.KeyErrorf("products", "must be between 1 and %d, got %d", MaxProducts, c.Products))
	}
	if c.Stock < 0 {
		errs = append(errs, svc.KeyErrorf("stock", "must not be negative, got %d", c.Stock))
	}
	if c.PoolSize < 1 || c.PoolSize > MaxPoolSize {
		errs = append(errs, svc.KeyErrorf("pool_size", "must be between 1 and %d, got %d", MaxPoolSize, c.PoolSize))
	}
	switch c.Op {
	case OpAll, OpList, OpGet, OpOrder, OpOrders:
	default:
		errs = append(errs, svc.KeyErrorf("op", "must be one of %q, %q, %q, %q or %q, got %q", OpAll, OpList, OpGet, OpOrder, OpOrders, c.Op))
	}
	if c.Ingress != "" && c.Ingress != IngressNginx {
		errs = append(errs, svc.KeyErrorf("ingress", "must be %q or left out, got %q", IngressNginx, c.Ingress))
	}
	return errors.Join(errs...)
}

// Entry is the gateway.
func (c *Config) Entry() string { return Gateway }

// IngressName is app.ingress, for a deployer (svc.IngressUser).
func (c *Config) IngressName() string { return c.Ingress }

// Backing is the shop's database: its schema and seeded catalogue.
func (c *Config) Backing() []svc.Backing {
	return []svc.Backing{{Name: DB, Kind: svc.BackingPostgres, Setup: Schema(c.Products, c.Stock)}}
}

// Schema is the SQL that creates the shop's tables and seeds n products
// with stock units each; product i costs PriceOf(i).
func Schema(n int, stock int64) string {
	return fmt.Sprintf(`
CREATE TABLE products (
  id          bigint PRIMARY KEY,
  name        text   NOT NULL,
  price_cents bigint NOT NULL CHECK (price_cents > 0),
  stock       bigint NOT NULL CHECK (stock >= 0)
);
CREATE TABLE orders (
  id          bigserial PRIMARY KEY,
  product_id  bigint NOT NULL REFERENCES products (id),
  quantity    bigint NOT NULL CHECK (quantity > 0),
  total_cents bigint NOT NULL,
  customer    text   NOT NULL,
  created     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_by_customer ON orders (customer, id DESC);
INSERT INTO products (id, name, price_cents, stock)
  SELECT i, 'product-' || i, 100 + (i * 7919) %% 10000, %d
  FROM generate_series(1, %d) AS i;
`, stock, n)
}

// PriceOf is the seeded price of product id in cents.
func PriceOf(id int64) int64 { return 100 + (id*7919)%10000 }

// NameOf is the seeded name of product id.
func NameOf(id int64) string { return fmt.Sprintf("product-%d", id) }

// Components are the gateway, which calls products and orders, and the
// two services, which share the database.
func (c *Config) Components() []svc.Component {
	return []svc.Component{
		{
			Name: Gateway, Service: &shoppb.Gateway_ServiceDesc, Deps: []string{Products, Orders},
			New: func(_ context.Context, deps svc.Deps) (any, error) {
				return &gateway{
					products: shoppb.NewProductsClient(deps.Conn(Products)),
					orders:   shoppb.NewOrdersClient(deps.Conn(Orders)),
				}, nil
			},
		},
		{
			Name: Products, Service: &shoppb.Products_ServiceDesc,
			New: func(ctx context.Context, _ svc.Deps) (any, error) {
				pool, err := c.open(ctx, Products)
				if err != nil {
					return nil, err
				}
				return &products{db: pool, n: int64(c.Products)}, nil
			},
		},
		{
			Name: Orders, Service: &shoppb.Orders_ServiceDesc,
			New: func(ctx context.Context, _ svc.Deps) (any, error) {
				pool, err := c.open(ctx, Orders)
				if err != nil {
					return nil, err
				}
				return &orders{db: pool, n: int64(c.Products)}, nil
			},
		},
	}
}

// open connects component's pool to the database the deployer started,
// and checks it answers, so a host that cannot reach it fails its start.
func (c *Config) open(ctx context.Context, component string) (*pgxpool.Pool, error) {
	dsn, err := svc.BackingAddr(DB)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", component, err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: database address: %w", component, err)
	}
	cfg.MaxConns = int32(c.PoolSize)
	cfg.ConnConfig.RuntimeParams["application_name"] = "svclab-shop-" + component
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: database pool: %w", component, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%s: database: %w", component, err)
	}
	return pool, nil
}

// Requests are the default requests app.op chooses. Product ids 0 let the
// services pick a product at random, so a load generator's fixed request
// spreads over the catalogue instead of queueing on one row's lock.
func (c *Config) Requests() []svc.Request {
	n := int64(c.Products)
	all := []svc.Request{
		{
			Name: OpList, Method: shoppb.Gateway_ListProducts_FullMethodName,
			Message:     &shoppb.ListProductsRequest{Limit: DefaultLimit},
			NewResponse: func() proto.Message { return new(shoppb.ListProductsResponse) },
			Check: func(m proto.Message) error {
				ps := m.(*shoppb.ListProductsResponse).GetProducts()
				if want := min(n, DefaultLimit); int64(len(ps)) != want {
					return fmt.Errorf("%d products, want %d", len(ps), want)
				}
				return checkProduct(ps[0], n)
			},
		},
		{
			Name: OpGet, Method: shoppb.Gateway_GetProduct_FullMethodName,
			Message:     &shoppb.GetProductRequest{},
			NewResponse: func() proto.Message { return new(shoppb.Product) },
			Check:       func(m proto.Message) error { return checkProduct(m.(*shoppb.Product), n) },
		},
		{
			Name: OpOrder, Method: shoppb.Gateway_CreateOrder_FullMethodName,
			Message:     &shoppb.CreateOrderRequest{Quantity: 1, Customer: "loadgen"},
			NewResponse: func() proto.Message { return new(shoppb.Order) },
			Check: func(m proto.Message) error {
				o := m.(*shoppb.Order)
				if o.GetId() <= 0 || o.GetQuantity() != 1 || o.GetTotalCents() != PriceOf(o.GetProductId()) {
					return fmt.Errorf("order %v: want an id, quantity 1 and the product's price", o)
				}
				return nil
			},
		},
		{
			Name: OpOrders, Method: shoppb.Gateway_ListOrders_FullMethodName,
			Message:     &shoppb.ListOrdersRequest{Customer: "loadgen", Limit: DefaultLimit},
			NewResponse: func() proto.Message { return new(shoppb.ListOrdersResponse) },
			Check: func(m proto.Message) error {
				if got := len(m.(*shoppb.ListOrdersResponse).GetOrders()); got > DefaultLimit {
					return fmt.Errorf("%d orders, more than the limit %d", got, DefaultLimit)
				}
				return nil
			},
		},
	}
	if c.Op == OpAll {
		return all
	}
	for _, r := range all {
		if r.Name == c.Op {
			return []svc.Request{r}
		}
	}
	return nil
}

func checkProduct(p *shoppb.Product, n int64) error {
	id := p.GetId()
	if id < 1 || id > n || p.GetName() != NameOf(id) || p.GetPriceCents() != PriceOf(id) {
		return fmt.Errorf("product %v is not seeded product %d", p, id)
	}
	return nil
}

// gateway is the entry: it forwards each call to the service that owns it,
// returning the downstream status unchanged.
type gateway struct {
	shoppb.UnimplementedGatewayServer
	products shoppb.ProductsClient
	orders   shoppb.OrdersClient
}

func (g *gateway) ListProducts(ctx context.Context, in *shoppb.ListProductsRequest) (*shoppb.ListProductsResponse, error) {
	return g.products.ListProducts(ctx, in)
}

func (g *gateway) GetProduct(ctx context.Context, in *shoppb.GetProductRequest) (*shoppb.Product, error) {
	return g.products.GetProduct(ctx, in)
}

func (g *gateway) CreateOrder(ctx context.Context, in *shoppb.CreateOrderRequest) (*shoppb.Order, error) {
	return g.orders.CreateOrder(ctx, in)
}

func (g *gateway) ListOrders(ctx context.Context, in *shoppb.ListOrdersRequest) (*shoppb.ListOrdersResponse, error) {
	return g.orders.ListOrders(ctx, in)
}

// products reads the catalogue.
type products struct {
	shoppb.UnimplementedProductsServer
	db *pgxpool.Pool
	n  int64 // catalogue size, for random picks
}

func limitOf(l int32) (int32, error) {
	switch {
	case l == 0:
		return DefaultLimit, nil
	case l < 0 || l > MaxLimit:
		return 0, status.Errorf(codes.InvalidArgument, "limit must be between 1 and %d, got %d", MaxLimit, l)
	}
	return l, nil
}

func (p *products) ListProducts(ctx context.Context, in *shoppb.ListProductsRequest) (*shoppb.ListProductsResponse, error) {
	if err := svc.Sleep(ctx, Products, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	limit, err := limitOf(in.GetLimit())
	if err != nil {
		return nil, err
	}
	if in.GetOffset() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "offset must not be negative, got %d", in.GetOffset())
	}
	rows, err := p.db.Query(ctx, `SELECT id, name, price_cents, stock FROM products ORDER BY id LIMIT $1 OFFSET $2`, limit, in.GetOffset())
	if err != nil {
		return nil, dbError(ctx, "list products", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*shoppb.Product, error) {
		var x shoppb.Product
		return &x, r.Scan(&x.Id, &x.Name, &x.PriceCents, &x.Stock)
	})
	if err != nil {
		return nil, dbError(ctx, "list products", err)
	}
	return &shoppb.ListProductsResponse{Products: out}, nil
}

func (p *products) GetProduct(ctx context.Context, in *shoppb.GetProductRequest) (*shoppb.Product, error) {
	if err := svc.Sleep(ctx, Products, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	id := in.GetId()
	if id == 0 {
		id = 1 + rand.Int64N(p.n)
	}
	var x shoppb.Product
	err := p.db.QueryRow(ctx, `SELECT id, name, price_cents, stock FROM products WHERE id = $1`, id).
		Scan(&x.Id, &x.Name, &x.PriceCents, &x.Stock)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, status.Errorf(codes.NotFound, "no product %d", id)
	}
	if err != nil {
		return nil, dbError(ctx, "get product", err)
	}
	return &x, nil
}

// orders records orders.
type orders struct {
	shoppb.UnimplementedOrdersServer
	db *pgxpool.Pool
	n  int64
}

// ErrNoStock is the message of the FailedPrecondition status an order for
// more than the stock gets.
const ErrNoStock = "insufficient stock"

// CreateOrder takes the units from stock and records the order in one
// transaction. The stock check is the UPDATE's own condition, evaluated
// under the row's lock, so concurrent orders can never sell more than
// there is.
func (o *orders) CreateOrder(ctx context.Context, in *shoppb.CreateOrderRequest) (*shoppb.Order, error) {
	if err := svc.Sleep(ctx, Orders, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	if in.GetQuantity() <= 0 {
		return nil, status.Errorf(codes.InvalidArgument, "quantity must be positive, got %d", in.GetQuantity())
	}
	id := in.GetProductId()
	if id == 0 {
		id = 1 + rand.Int64N(o.n)
	}
	customer := in.GetCustomer()
	if customer == "" {
		customer = "anonymous"
	}
	out := &shoppb.Order{ProductId: id, Quantity: in.GetQuantity(), Customer: customer}
	err := pgx.BeginFunc(ctx, o.db, func(tx pgx.Tx) error {
		var price int64
		err := tx.QueryRow(ctx, `UPDATE products SET stock = stock - $2 WHERE id = $1 AND stock >= $2 RETURNING price_cents`, id, in.GetQuantity()).Scan(&price)
		if errors.Is(err, pgx.ErrNoRows) {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM products WHERE id = $1)`, id).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return status.Errorf(codes.NotFound, "no product %d", id)
			}
			return status.Errorf(codes.FailedPrecondition, "%s: product %d has fewer than %d units", ErrNoStock, id, in.GetQuantity())
		}
		if err != nil {
			return err
		}
		out.TotalCents = price * in.GetQuantity()
		return tx.QueryRow(ctx, `INSERT INTO orders (product_id, quantity, total_cents, customer) VALUES ($1, $2, $3, $4) RETURNING id`,
			id, in.GetQuantity(), out.TotalCents, customer).Scan(&out.Id)
	})
	if err != nil {
		return nil, dbError(ctx, "create order", err)
	}
	return out, nil
}

func (o *orders) ListOrders(ctx context.Context, in *shoppb.ListOrdersRequest) (*shoppb.ListOrdersResponse, error) {
	if err := svc.Sleep(ctx, Orders, in.GetSleepMicros()); err != nil {
		return nil, err
	}
	limit, err := limitOf(in.GetLimit())
	if err != nil {
		return nil, err
	}
	rows, err := o.db.Query(ctx, `SELECT id, product_id, quantity, total_cents, customer FROM orders
		WHERE $1 = '' OR customer = $1 ORDER BY id DESC LIMIT $2`, in.GetCustomer(), limit)
	if err != nil {
		return nil, dbError(ctx, "list orders", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*shoppb.Order, error) {
		var x shoppb.Order
		return &x, r.Scan(&x.Id, &x.ProductId, &x.Quantity, &x.TotalCents, &x.Customer)
	})
	if err != nil {
		return nil, dbError(ctx, "list orders", err)
	}
	return &shoppb.ListOrdersResponse{Orders: out}, nil
}

// dbError keeps a status an inner step chose, turns the caller's
// cancellation or deadline into its own status, and reports anything else
// as Unavailable (the database is a dependency that failed).
func dbError(ctx context.Context, what string, err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Errorf(codes.Unavailable, "%s: database: %v", what, err)
}
