package boutique

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/svclab/svclab/proto/boutique"
)

// ---- cart and its store ----

// cart is the cart service: it checks requests and keeps carts in the
// cart store.
type cart struct {
	pb.UnimplementedCartServiceServer
	store pb.CartStoreClient
}

func (c *cart) AddItem(ctx context.Context, in *pb.AddItemRequest) (*pb.Empty, error) {
	if in.GetUserId() == "" || in.GetItem().GetProductId() == "" {
		return nil, status.Error(codes.InvalidArgument, "add item: user_id and item.product_id are required")
	}
	if q := in.GetItem().GetQuantity(); q <= 0 || q > MaxQuantity {
		return nil, status.Errorf(codes.InvalidArgument, "add item: quantity must be between 1 and %d, got %d", MaxQuantity, q)
	}
	return c.store.Add(ctx, in)
}

func (c *cart) GetCart(ctx context.Context, in *pb.GetCartRequest) (*pb.Cart, error) {
	return c.store.Get(ctx, in)
}

func (c *cart) EmptyCart(ctx context.Context, in *pb.EmptyCartRequest) (*pb.Empty, error) {
	return c.store.Remove(ctx, in)
}

// memoryStore keeps carts in the process, as Service Weaver's port of
// Online Boutique does (its cartCache component).
type memoryStore struct {
	pb.UnimplementedCartStoreServer
	mu    sync.Mutex
	carts map[string]map[string]int32 // user → product → quantity
}

func (s *memoryStore) Add(_ context.Context, in *pb.AddItemRequest) (*pb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.carts[in.GetUserId()]
	if c == nil {
		c = map[string]int32{}
		s.carts[in.GetUserId()] = c
	}
	c[in.GetItem().GetProductId()] += in.GetItem().GetQuantity()
	return &pb.Empty{}, nil
}

func (s *memoryStore) Get(_ context.Context, in *pb.GetCartRequest) (*pb.Cart, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cartOf(in.GetUserId(), s.carts[in.GetUserId()]), nil
}

func (s *memoryStore) Remove(_ context.Context, in *pb.EmptyCartRequest) (*pb.Empty, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.carts, in.GetUserId())
	return &pb.Empty{}, nil
}

// cartOf is a user's cart, items by product id.
func cartOf(user string, items map[string]int32) *pb.Cart {
	out := &pb.Cart{UserId: user}
	for _, id := range slices.Sorted(maps.Keys(items)) {
		out.Items = append(out.Items, &pb.CartItem{ProductId: id, Quantity: items[id]})
	}
	return out
}

// redisStore keeps each user's cart as a Redis hash, product → quantity,
// so that adding is one atomic HINCRBY (the original's redis-cart).
type redisStore struct {
	pb.UnimplementedCartStoreServer
	db *goredis.Client
}

func cartKey(user string) string { return "cart:" + user }

func (s *redisStore) Add(ctx context.Context, in *pb.AddItemRequest) (*pb.Empty, error) {
	if err := s.db.HIncrBy(ctx, cartKey(in.GetUserId()), in.GetItem().GetProductId(), int64(in.GetItem().GetQuantity())).Err(); err != nil {
		return nil, storeError(ctx, "add item", err)
	}
	return &pb.Empty{}, nil
}

func (s *redisStore) Get(ctx context.Context, in *pb.GetCartRequest) (*pb.Cart, error) {
	m, err := s.db.HGetAll(ctx, cartKey(in.GetUserId())).Result()
	if err != nil {
		return nil, storeError(ctx, "get cart", err)
	}
	items := make(map[string]int32, len(m))
	for id, v := range m {
		q, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, status.Errorf(codes.DataLoss, "cart %s: product %s has quantity %q", in.GetUserId(), id, v)
		}
		items[id] = int32(q)
	}
	return cartOf(in.GetUserId(), items), nil
}

func (s *redisStore) Remove(ctx context.Context, in *pb.EmptyCartRequest) (*pb.Empty, error) {
	if err := s.db.Del(ctx, cartKey(in.GetUserId())).Err(); err != nil {
		return nil, storeError(ctx, "empty cart", err)
	}
	return &pb.Empty{}, nil
}

// storeError turns the caller's cancellation into its own status and
// anything else into Unavailable: the store is a dependency that failed.
func storeError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return status.Errorf(codes.Unavailable, "%s: redis: %v", what, err)
}

// ---- product catalog ----

type productCatalog struct {
	pb.UnimplementedProductCatalogServiceServer
	cat *catalogue
}

func (p *productCatalog) ListProducts(context.Context, *pb.Empty) (*pb.ListProductsResponse, error) {
	return &pb.ListProductsResponse{Products: p.cat.products}, nil
}

func (p *productCatalog) GetProduct(_ context.Context, in *pb.GetProductRequest) (*pb.Product, error) {
	if x, ok := p.cat.byID[in.GetId()]; ok {
		return x, nil
	}
	return nil, status.Errorf(codes.NotFound, "no product with ID %s", in.GetId())
}

// SearchProducts matches the query in names and descriptions, ignoring
// case, as the original does.
func (p *productCatalog) SearchProducts(_ context.Context, in *pb.SearchProductsRequest) (*pb.SearchProductsResponse, error) {
	q := strings.ToLower(in.GetQuery())
	out := &pb.SearchProductsResponse{}
	for _, x := range p.cat.products {
		if strings.Contains(strings.ToLower(x.GetName()), q) || strings.Contains(strings.ToLower(x.GetDescription()), q) {
			out.Results = append(out.Results, x)
		}
	}
	return out, nil
}

// ---- currency ----

type currency struct {
	pb.UnimplementedCurrencyServiceServer
	rates rates
}

func (c *currency) GetSupportedCurrencies(context.Context, *pb.Empty) (*pb.GetSupportedCurrenciesResponse, error) {
	return &pb.GetSupportedCurrenciesResponse{CurrencyCodes: c.rates.codes()}, nil
}

func (c *currency) Convert(_ context.Context, in *pb.CurrencyConversionRequest) (*pb.Money, error) {
	return c.rates.convert(in.GetFrom(), in.GetToCode())
}

// ---- payment ----

type payment struct {
	pb.UnimplementedPaymentServiceServer
	now func() time.Time
}

// Charge validates the card as the original does (a valid number of an
// accepted type, not expired) and pretends to charge it.
func (p *payment) Charge(_ context.Context, in *pb.ChargeRequest) (*pb.ChargeResponse, error) {
	cc := in.GetCreditCard()
	if err := checkCard(cc, p.now()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if nanosOf(in.GetAmount()) < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "amount %s is negative", show(in.GetAmount()))
	}
	return &pb.ChargeResponse{TransactionId: uuid.NewString()}, nil
}

// Card errors, as the original's payment service words them.
var (
	ErrCardInvalid  = errors.New("Credit card info is invalid")
	ErrCardAccepted = errors.New("Only VISA or MasterCard is accepted")
	ErrCardExpired  = errors.New("credit card expired")
)

// checkCard reports why cc cannot be charged at now, nil when it can.
func checkCard(cc *pb.CreditCardInfo, now time.Time) error {
	number := strings.NewReplacer(" ", "", "-", "").Replace(cc.GetCreditCardNumber())
	if !luhn(number) {
		return ErrCardInvalid
	}
	if t := cardType(number); t != "visa" && t != "mastercard" {
		return fmt.Errorf("Sorry, we cannot process %s credit cards. %w.", t, ErrCardAccepted)
	}
	y, m := int(cc.GetCreditCardExpirationYear()), int(cc.GetCreditCardExpirationMonth())
	if m < 1 || m > 12 {
		return fmt.Errorf("%w: expiration month %d", ErrCardInvalid, m)
	}
	if now.Year()*12+int(now.Month()) > y*12+m {
		return fmt.Errorf("Your credit card (ending %s) expired on %d/%d: %w", number[len(number)-4:], m, y, ErrCardExpired)
	}
	return nil
}

// luhn reports whether number is 12 to 19 digits with a valid Luhn check
// digit.
func luhn(number string) bool {
	if len(number) < 12 || len(number) > 19 {
		return false
	}
	sum := 0
	for i := range len(number) {
		d := int(number[len(number)-1-i] - '0')
		if d < 0 || d > 9 {
			return false
		}
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// cardType names a card's network by its number's prefix and length.
func cardType(n string) string {
	p2, _ := strconv.Atoi(n[:2])
	p4, _ := strconv.Atoi(n[:4])
	switch {
	case n[0] == '4' && (len(n) == 13 || len(n) == 16 || len(n) == 19):
		return "visa"
	case len(n) == 16 && (p2 >= 51 && p2 <= 55 || p4 >= 2221 && p4 <= 2720):
		return "mastercard"
	case len(n) == 15 && (p2 == 34 || p2 == 37):
		return "amex"
	case strings.HasPrefix(n, "6011") || strings.HasPrefix(n, "65"):
		return "discover"
	}
	return "unknown"
}

// ---- shipping ----

type shipping struct {
	pb.UnimplementedShippingServiceServer
}

// ShippingUSD is the original's flat quote for a non-empty order, in
// nanos of USD.
const ShippingUSD = 8_990_000_000

// GetQuote is the original's: 8.99 USD for any items, 0 for none.
func (shipping) GetQuote(_ context.Context, in *pb.GetQuoteRequest) (*pb.GetQuoteResponse, error) {
	n := int64(0)
	if count(in.GetItems()) > 0 {
		n = ShippingUSD
	}
	return &pb.GetQuoteResponse{CostUsd: money("USD", n)}, nil
}

// ShipOrder returns a tracking id of the original's form.
func (shipping) ShipOrder(_ context.Context, in *pb.ShipOrderRequest) (*pb.ShipOrderResponse, error) {
	a := in.GetAddress()
	salt := a.GetStreetAddress() + ", " + a.GetCity() + ", " + a.GetState()
	return &pb.ShipOrderResponse{TrackingId: fmt.Sprintf("%c%c-%d%03d-%d%07d",
		'A'+rand.IntN(25), 'A'+rand.IntN(25), len(salt), rand.IntN(1000), len(salt)/2, rand.IntN(10_000_000))}, nil
}

func count(items []*pb.CartItem) int {
	n := 0
	for _, it := range items {
		n += int(it.GetQuantity())
	}
	return n
}

// ---- email ----

// email confirms orders. The original renders an HTML mail and logs it
// (it sends nothing); this one checks the request and counts.
type email struct {
	pb.UnimplementedEmailServiceServer
	sent atomic.Int64
}

func (e *email) SendOrderConfirmation(_ context.Context, in *pb.SendOrderConfirmationRequest) (*pb.Empty, error) {
	if !strings.Contains(in.GetEmail(), "@") {
		return nil, status.Errorf(codes.InvalidArgument, "not an email address: %q", in.GetEmail())
	}
	if in.GetOrder().GetOrderId() == "" {
		return nil, status.Error(codes.InvalidArgument, "order without an id")
	}
	e.sent.Add(1)
	return &pb.Empty{}, nil
}

// ---- recommendation ----

type recommendation struct {
	pb.UnimplementedRecommendationServiceServer
	catalog pb.ProductCatalogServiceClient
}

// MaxRecommendations is how many products the original recommends.
const MaxRecommendations = 5

// ListRecommendations picks up to five catalogue products that are not in
// the request, at random, as the original does.
func (r *recommendation) ListRecommendations(ctx context.Context, in *pb.ListRecommendationsRequest) (*pb.ListRecommendationsResponse, error) {
	all, err := r.catalog.ListProducts(ctx, &pb.Empty{})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range all.GetProducts() {
		if !slices.Contains(in.GetProductIds(), p.GetId()) {
			ids = append(ids, p.GetId())
		}
	}
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return &pb.ListRecommendationsResponse{ProductIds: ids[:min(MaxRecommendations, len(ids))]}, nil
}

// ---- ad ----

type ad struct {
	pb.UnimplementedAdServiceServer
	byCat map[string][]*pb.Ad
	all   []*pb.Ad
}

// MaxRandomAds is how many ads the original serves when the context
// matches none.
const MaxRandomAds = 2

// GetAds returns the ads of the context's categories, or random ones.
func (a *ad) GetAds(_ context.Context, in *pb.AdRequest) (*pb.AdResponse, error) {
	out := &pb.AdResponse{}
	for _, k := range in.GetContextKeys() {
		out.Ads = append(out.Ads, a.byCat[k]...)
	}
	if len(out.Ads) == 0 {
		for range MaxRandomAds {
			out.Ads = append(out.Ads, a.all[rand.IntN(len(a.all))])
		}
	}
	return out, nil
}

// ---- checkout ----

type checkout struct {
	pb.UnimplementedCheckoutServiceServer
	cart     pb.CartServiceClient
	catalog  pb.ProductCatalogServiceClient
	currency pb.CurrencyServiceClient
	shipping pb.ShippingServiceClient
	payment  pb.PaymentServiceClient
	email    pb.EmailServiceClient
	orderID  func() string
}

// PlaceOrder is the original's: price the cart and the shipping in the
// user's currency, charge the total, ship, empty the cart, and confirm by
// mail (a failed mail is not a failed order).
func (c *checkout) PlaceOrder(ctx context.Context, in *pb.PlaceOrderRequest) (*pb.PlaceOrderResponse, error) {
	cur := in.GetUserCurrency()
	if cur == "" {
		return nil, status.Error(codes.InvalidArgument, "place order: user_currency is required")
	}
	crt, err := c.cart.GetCart(ctx, &pb.GetCartRequest{UserId: in.GetUserId()})
	if err != nil {
		return nil, fmt.Errorf("place order: cart: %w", err)
	}
	items := make([]*pb.OrderItem, 0, len(crt.GetItems()))
	total := []*pb.Money{}
	for _, it := range crt.GetItems() {
		p, err := c.catalog.GetProduct(ctx, &pb.GetProductRequest{Id: it.GetProductId()})
		if err != nil {
			return nil, fmt.Errorf("place order: product %s: %w", it.GetProductId(), err)
		}
		price, err := c.currency.Convert(ctx, &pb.CurrencyConversionRequest{From: p.GetPriceUsd(), ToCode: cur})
		if err != nil {
			return nil, fmt.Errorf("place order: price of %s: %w", it.GetProductId(), err)
		}
		items = append(items, &pb.OrderItem{Item: it, Cost: price})
		total = append(total, times(price, it.GetQuantity()))
	}
	quote, err := c.shipping.GetQuote(ctx, &pb.GetQuoteRequest{Address: in.GetAddress(), Items: crt.GetItems()})
	if err != nil {
		return nil, fmt.Errorf("place order: shipping quote: %w", err)
	}
	ship, err := c.currency.Convert(ctx, &pb.CurrencyConversionRequest{From: quote.GetCostUsd(), ToCode: cur})
	if err != nil {
		return nil, fmt.Errorf("place order: shipping cost: %w", err)
	}
	amount, err := sum(cur, append(total, ship)...)
	if err != nil {
		return nil, err
	}
	if _, err := c.payment.Charge(ctx, &pb.ChargeRequest{Amount: amount, CreditCard: in.GetCreditCard()}); err != nil {
		return nil, fmt.Errorf("place order: charge: %w", err)
	}
	shipped, err := c.shipping.ShipOrder(ctx, &pb.ShipOrderRequest{Address: in.GetAddress(), Items: crt.GetItems()})
	if err != nil {
		return nil, fmt.Errorf("place order: ship: %w", err)
	}
	// The order stands once charged and shipped; the original ignores a
	// cart that could not be emptied too.
	_, _ = c.cart.EmptyCart(ctx, &pb.EmptyCartRequest{UserId: in.GetUserId()})
	res := &pb.OrderResult{
		OrderId:            c.orderID(),
		ShippingTrackingId: shipped.GetTrackingId(),
		ShippingCost:       ship,
		ShippingAddress:    in.GetAddress(),
		Items:              items,
	}
	_, _ = c.email.SendOrderConfirmation(ctx, &pb.SendOrderConfirmationRequest{Email: in.GetEmail(), Order: res})
	return &pb.PlaceOrderResponse{Order: res}, nil
}

// orderTotal is what an order costs: shipping plus every item's cost ×
// quantity, in the order's currency.
func orderTotal(o *pb.OrderResult) (*pb.Money, error) {
	ms := []*pb.Money{o.GetShippingCost()}
	for _, it := range o.GetItems() {
		ms = append(ms, times(it.GetCost(), it.GetItem().GetQuantity()))
	}
	return sum(o.GetShippingCost().GetCurrencyCode(), ms...)
}
