// Package boutique is Online Boutique (GoogleCloudPlatform/microservices-
// demo), the 11-service shop S0 measured on Service Weaver, as a svclab
// app: the original's services and messages (proto/boutique), its call
// graph, its product catalogue and currency table (embedded data files),
// and a frontend that serves the original's HTML routes on the gateway's
// port. The cart store is in the process (as Service Weaver's port) or a
// real Redis server the deployer runs (app.cart_store).
package boutique

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"
	"google.golang.org/protobuf/proto"

	pb "github.com/svclab/svclab/proto/boutique"
	"github.com/svclab/svclab/svc"
)

// Name is the app.name of this app.
const Name = "boutique"

// Component names, as the original's services (without "service").
const (
	Frontend       = "frontend"
	Cart           = "cart"
	CartStore      = "cartstore"
	ProductCatalog = "productcatalog"
	Currency       = "currency"
	Payment        = "payment"
	Shipping       = "shipping"
	Email          = "email"
	Checkout       = "checkout"
	Recommendation = "recommendation"
	Ad             = "ad"
)

// Values of app.cart_store.
const (
	StoreMemory = "memory"
	StoreRedis  = "redis"
)

// Values of app.order_ids.
const (
	OrderUUID     = "uuid"
	OrderSequence = "sequence"
)

// Values of app.op, the default requests.
const (
	OpAll      = "all"
	OpHome     = "home"
	OpProduct  = "product"
	OpCart     = "cart"
	OpCheckout = "checkout"
)

// CartDB is the name of the Redis backing service (SVCLAB_BACKING_CART).
const CartDB = "cart"

// MaxQuantity bounds one add to the cart; the original's form offers 1 to
// 10.
const MaxQuantity = 100

func init() {
	svc.Register(&svc.App{
		Name:    Name,
		Summary: "Online Boutique: 11 services, HTML frontend, cart in memory or Redis (S0)",
		NewConfig: func() svc.Config {
			return &Config{CartStore: StoreMemory, OrderIDs: OrderUUID, Op: OpAll, RedisPool: 10}
		},
	})
}

// Config is the [app] table of a boutique spec.
type Config struct {
	// CartStore is where carts live: "memory" or "redis".
	CartStore string `toml:"cart_store" json:"cart_store"`
	// RedisPool is the most connections the cart store process holds to
	// Redis (go-redis PoolSize).
	RedisPool int `toml:"redis_pool" json:"redis_pool"`
	// OrderIDs is "uuid" (random, as the original) or "sequence"
	// (order-1, order-2, … per checkout process), for tests.
	OrderIDs string `toml:"order_ids" json:"order_ids"`
	// Op chooses the default requests.
	Op string `toml:"op" json:"op"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	if c.CartStore != StoreMemory && c.CartStore != StoreRedis {
		errs = append(errs, svc.KeyErrorf("cart_store", "must be %q or %q, got %q", StoreMemory, StoreRedis, c.CartStore))
	}
	if c.RedisPool < 1 || c.RedisPool > 1000 {
		errs = append(errs, svc.KeyErrorf("redis_pool", "must be between 1 and 1000, got %d", c.RedisPool))
	}
	if c.OrderIDs != OrderUUID && c.OrderIDs != OrderSequence {
		errs = append(errs, svc.KeyErrorf("order_ids", "must be %q or %q, got %q", OrderUUID, OrderSequence, c.OrderIDs))
	}
	switch c.Op {
	case OpAll, OpHome, OpProduct, OpCart, OpCheckout:
	default:
		errs = append(errs, svc.KeyErrorf("op", "must be one of %q, %q, %q, %q or %q, got %q", OpAll, OpHome, OpProduct, OpCart, OpCheckout, c.Op))
	}
	return errors.Join(errs...)
}

// Entry is the frontend.
func (c *Config) Entry() string { return Frontend }

// Backing is the Redis server of app.cart_store = "redis", none otherwise.
func (c *Config) Backing() []svc.Backing {
	if c.CartStore != StoreRedis {
		return nil
	}
	return []svc.Backing{{Name: CartDB, Kind: svc.BackingRedis}}
}

// Components are the original's ten services and the cart store, with
// the original's call graph.
func (c *Config) Components() []svc.Component {
	return []svc.Component{
		{
			Name: Frontend, Service: &pb.Frontend_ServiceDesc,
			Deps: []string{Ad, Cart, ProductCatalog, Currency, Recommendation, Shipping, Checkout},
			New: func(_ context.Context, d svc.Deps) (any, error) {
				return newFrontend(d)
			},
		},
		{
			Name: Cart, Service: &pb.CartService_ServiceDesc, Deps: []string{CartStore},
			New: func(_ context.Context, d svc.Deps) (any, error) {
				return &cart{store: pb.NewCartStoreClient(d.Conn(CartStore))}, nil
			},
		},
		{
			Name: CartStore, Service: &pb.CartStore_ServiceDesc,
			New: func(ctx context.Context, _ svc.Deps) (any, error) { return c.newStore(ctx) },
		},
		{
			Name: ProductCatalog, Service: &pb.ProductCatalogService_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) {
				cat, err := loadCatalogue()
				return &productCatalog{cat: cat}, err
			},
		},
		{
			Name: Currency, Service: &pb.CurrencyService_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) {
				r, err := loadRates()
				return &currency{rates: r}, err
			},
		},
		{
			Name: Payment, Service: &pb.PaymentService_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) { return &payment{now: time.Now}, nil },
		},
		{
			Name: Shipping, Service: &pb.ShippingService_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) { return shipping{}, nil },
		},
		{
			Name: Email, Service: &pb.EmailService_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) { return &email{}, nil },
		},
		{
			Name: Checkout, Service: &pb.CheckoutService_ServiceDesc,
			Deps: []string{Cart, ProductCatalog, Currency, Shipping, Payment, Email},
			New: func(_ context.Context, d svc.Deps) (any, error) {
				return &checkout{
					cart:     pb.NewCartServiceClient(d.Conn(Cart)),
					catalog:  pb.NewProductCatalogServiceClient(d.Conn(ProductCatalog)),
					currency: pb.NewCurrencyServiceClient(d.Conn(Currency)),
					shipping: pb.NewShippingServiceClient(d.Conn(Shipping)),
					payment:  pb.NewPaymentServiceClient(d.Conn(Payment)),
					email:    pb.NewEmailServiceClient(d.Conn(Email)),
					orderID:  c.orderIDs(),
				}, nil
			},
		},
		{
			Name: Recommendation, Service: &pb.RecommendationService_ServiceDesc, Deps: []string{ProductCatalog},
			New: func(_ context.Context, d svc.Deps) (any, error) {
				return &recommendation{catalog: pb.NewProductCatalogServiceClient(d.Conn(ProductCatalog))}, nil
			},
		},
		{
			Name: Ad, Service: &pb.AdService_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) {
				byCat, all, err := loadAds()
				return &ad{byCat: byCat, all: all}, err
			},
		},
	}
}

// newStore is the cart store app.cart_store names; a Redis store checks
// that the server answers, so a host that cannot reach it fails its start.
func (c *Config) newStore(ctx context.Context) (pb.CartStoreServer, error) {
	if c.CartStore == StoreMemory {
		return &memoryStore{carts: map[string]map[string]int32{}}, nil
	}
	addr, err := svc.BackingAddr(CartDB)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CartStore, err)
	}
	opts, err := goredis.ParseURL(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: redis address %q: %w", CartStore, addr, err)
	}
	opts.PoolSize = c.RedisPool
	db := goredis.NewClient(opts)
	if err := db.Ping(ctx).Err(); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: redis at %s: %w", CartStore, addr, err)
	}
	return &redisStore{db: db}, nil
}

// orderIDs returns the order id maker app.order_ids names.
func (c *Config) orderIDs() func() string {
	if c.OrderIDs == OrderSequence {
		var n atomic.Int64
		return func() string { return "order-" + strconv.FormatInt(n.Add(1), 10) }
	}
	return uuid.NewString
}

// LoadgenUser is the session of the default requests.
const LoadgenUser = "loadgen"

// Requests are the default requests app.op chooses: pages of the
// frontend as RPCs, in the session LoadgenUser, priced in EUR.
func (c *Config) Requests() []svc.Request {
	page := &pb.PageRequest{SessionId: LoadgenUser, Currency: "EUR"}
	all := []svc.Request{
		{
			Name: OpHome, Method: pb.Frontend_Home_FullMethodName, Message: page,
			NewResponse: func() proto.Message { return new(pb.HomePage) },
			Check: func(m proto.Message) error {
				h := m.(*pb.HomePage)
				if len(h.GetProducts()) != 9 || h.GetProducts()[0].GetPrice().GetCurrencyCode() != "EUR" {
					return fmt.Errorf("home page with %d products priced in %q, want 9 in EUR", len(h.GetProducts()), h.GetProducts()[0].GetPrice().GetCurrencyCode())
				}
				return nil
			},
		},
		{
			Name: OpProduct, Method: pb.Frontend_Product_FullMethodName,
			Message:     &pb.PageRequest{SessionId: LoadgenUser, Currency: "EUR", ProductId: "OLJCESPC7Z"},
			NewResponse: func() proto.Message { return new(pb.ProductPage) },
			Check: func(m proto.Message) error {
				p := m.(*pb.ProductPage)
				if p.GetProduct().GetItem().GetName() != "Sunglasses" {
					return fmt.Errorf("product page of %q, want Sunglasses", p.GetProduct().GetItem().GetName())
				}
				return nil
			},
		},
		{
			Name: OpCart, Method: pb.Frontend_ViewCart_FullMethodName, Message: page,
			NewResponse: func() proto.Message { return new(pb.CartPage) },
		},
		{
			Name: OpCheckout, Method: pb.Frontend_PlaceOrder_FullMethodName,
			Message:     DefaultOrder(LoadgenUser, "EUR"),
			NewResponse: func() proto.Message { return new(pb.OrderPage) },
			Check: func(m proto.Message) error {
				if m.(*pb.OrderPage).GetOrder().GetOrderId() == "" {
					return errors.New("order without an id")
				}
				return nil
			},
		},
	}
	if c.Op == OpAll {
		// The three pages that only read: a checkout changes state, so
		// it is a default request only when asked for by name.
		return all[:3]
	}
	for _, r := range all {
		if r.Name == c.Op {
			return []svc.Request{r}
		}
	}
	return nil
}

// DefaultOrder is the original frontend's pre-filled checkout form: a
// valid VISA test number that expires in January of next year.
func DefaultOrder(user, currency string) *pb.PlaceOrderRequest {
	return &pb.PlaceOrderRequest{
		UserId: user, UserCurrency: currency, Email: "someone@example.com",
		Address: &pb.Address{StreetAddress: "1600 Amphitheatre Parkway", City: "Mountain View", State: "CA", Country: "United States", ZipCode: 94043},
		CreditCard: &pb.CreditCardInfo{
			CreditCardNumber: "4432-8015-6152-0454", CreditCardCvv: 672,
			CreditCardExpirationYear: int32(time.Now().Year() + 1), CreditCardExpirationMonth: 1,
		},
	}
}
