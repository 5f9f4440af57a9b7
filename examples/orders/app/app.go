// Package app is the orders app: an order service that prices an order
// and reserves its items, on the module's own protobuf services
// (proto/orders.proto), registered with svclab through its public API.
//
// Three components: "front" (the entry, service Orders) calls "pricing"
// (Pricing) and "stock" (Stock). Placed in one process (the monolith) the
// two calls are inproc, direct Go calls; split, they cross processes over
// deploy.transport.
package app

import (
	"context"
	"fmt"
	"hash/fnv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	orderspb "example.com/orders/proto"

	"github.com/svclab/svclab/svc"
)

// Name is the app.name of this app.
const Name = "orders"

// Component names.
const (
	Front   = "front"
	Pricing = "pricing"
	Stock   = "stock"
)

// MaxItems bounds app.items.
const MaxItems = 1000

func init() {
	svc.Register(&svc.App{
		Name:      Name,
		Summary:   "an order service: front prices an order (pricing) and reserves it (stock)",
		NewConfig: func() svc.Config { return &Config{Items: 5, MaxQuantity: 10} },
	})
}

// Config is the [app] table of an orders spec.
type Config struct {
	// Items is the number of lines of the order the load sends.
	Items int `toml:"items" json:"items"`
	// MaxQuantity is the most of one item stock reserves.
	MaxQuantity int32 `toml:"max_quantity" json:"max_quantity"`
}

// Validate checks the config, each problem at its key.
func (c *Config) Validate() error {
	if c.Items < 1 || c.Items > MaxItems {
		return svc.KeyErrorf("items", "must be between 1 and %d, got %d", MaxItems, c.Items)
	}
	if c.MaxQuantity < 1 {
		return svc.KeyErrorf("max_quantity", "must be at least 1, got %d", c.MaxQuantity)
	}
	return nil
}

// Entry is the front.
func (c *Config) Entry() string { return Front }

// Components are the front and the two services it calls.
func (c *Config) Components() []svc.Component {
	return []svc.Component{
		{
			Name:    Front,
			Service: &orderspb.Orders_ServiceDesc,
			Deps:    []string{Pricing, Stock},
			New: func(_ context.Context, deps svc.Deps) (any, error) {
				return &front{
					pricing: orderspb.NewPricingClient(deps.Conn(Pricing)),
					stock:   orderspb.NewStockClient(deps.Conn(Stock)),
				}, nil
			},
		},
		{
			Name:    Pricing,
			Service: &orderspb.Pricing_ServiceDesc,
			New:     func(context.Context, svc.Deps) (any, error) { return pricing{}, nil },
		},
		{
			Name:    Stock,
			Service: &orderspb.Stock_ServiceDesc,
			New: func(context.Context, svc.Deps) (any, error) {
				return stock{max: c.MaxQuantity}, nil
			},
		},
	}
}

// Requests is one order of app.items lines, whose answer must be priced
// and reserved.
func (c *Config) Requests() []svc.Request {
	req := &orderspb.PlaceRequest{}
	for i := range c.Items {
		req.Items = append(req.Items, &orderspb.Item{Sku: fmt.Sprintf("sku-%04d", i), Quantity: int32(i%int(c.MaxQuantity)) + 1})
	}
	want := Total(req.Items)
	return []svc.Request{{
		Name:        "place",
		Method:      orderspb.Orders_Place_FullMethodName,
		Message:     req,
		NewResponse: func() proto.Message { return new(orderspb.PlaceResponse) },
		Check: func(m proto.Message) error {
			r := m.(*orderspb.PlaceResponse)
			if r.GetTotalCents() != want || !r.GetReserved() {
				return fmt.Errorf("total %d reserved %v, want %d reserved", r.GetTotalCents(), r.GetReserved(), want)
			}
			return nil
		},
	}}
}

// Price is the unit price of a SKU in cents: 100 to 9,999, fixed by its
// name.
func Price(sku string) int64 {
	h := fnv.New32a()
	h.Write([]byte(sku))
	return 100 + int64(h.Sum32()%9900)
}

// Total is the price of an order.
func Total(items []*orderspb.Item) int64 {
	var t int64
	for _, it := range items {
		t += Price(it.GetSku()) * int64(it.GetQuantity())
	}
	return t
}

// front places orders: it asks pricing for the total and stock for the
// items.
type front struct {
	orderspb.UnimplementedOrdersServer
	pricing orderspb.PricingClient
	stock   orderspb.StockClient
}

// Place prices the order, then reserves it.
func (f *front) Place(ctx context.Context, in *orderspb.PlaceRequest) (*orderspb.PlaceResponse, error) {
	if len(in.GetItems()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "an order needs at least one item")
	}
	q, err := f.pricing.Quote(ctx, &orderspb.QuoteRequest{Items: in.GetItems()})
	if err != nil {
		return nil, err
	}
	r, err := f.stock.Reserve(ctx, &orderspb.ReserveRequest{Items: in.GetItems()})
	if err != nil {
		return nil, err
	}
	return &orderspb.PlaceResponse{TotalCents: q.GetTotalCents(), Reserved: r.GetReserved()}, nil
}

// pricing quotes orders.
type pricing struct {
	orderspb.UnimplementedPricingServer
}

// Quote sums the items' prices.
func (pricing) Quote(_ context.Context, in *orderspb.QuoteRequest) (*orderspb.QuoteResponse, error) {
	return &orderspb.QuoteResponse{TotalCents: Total(in.GetItems())}, nil
}

// stock reserves items, at most max of each.
type stock struct {
	orderspb.UnimplementedStockServer
	max int32
}

// Reserve reserves the items when each is within the maximum.
func (s stock) Reserve(_ context.Context, in *orderspb.ReserveRequest) (*orderspb.ReserveResponse, error) {
	for _, it := range in.GetItems() {
		if it.GetQuantity() < 1 || it.GetQuantity() > s.max {
			return &orderspb.ReserveResponse{Reserved: false}, nil
		}
	}
	return &orderspb.ReserveResponse{Reserved: true}, nil
}
