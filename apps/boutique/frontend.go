package boutique

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/svclab/svclab/proto/boutique"
	"github.com/svclab/svclab/svc"
)

// The original frontend's cookies.
const (
	SessionCookie  = "shop_session-id"
	CurrencyCookie = "shop_currency"
)

// DefaultCurrency prices a session that chose none.
const DefaultCurrency = "USD"

// shownCurrencies are the currencies the original's currency menu offers,
// of all the table's.
var shownCurrencies = []string{"CAD", "EUR", "GBP", "JPY", "TRY", "USD"}

// MaxPageRecommendations is how many recommendations a page shows, as the
// original's.
const MaxPageRecommendations = 4

//go:embed templates/pages.html
var templatesFS embed.FS

var pages = template.Must(template.New("pages").Funcs(template.FuncMap{"money": show}).ParseFS(templatesFS, "templates/pages.html"))

// frontend is the entry: the original's pages, as RPCs (the Frontend
// service) and as HTML on the gateway's port (svc.WebHandler).
type frontend struct {
	pb.UnimplementedFrontendServer
	ad             pb.AdServiceClient
	cart           pb.CartServiceClient
	catalog        pb.ProductCatalogServiceClient
	currency       pb.CurrencyServiceClient
	recommendation pb.RecommendationServiceClient
	shipping       pb.ShippingServiceClient
	checkout       pb.CheckoutServiceClient
	mux            *http.ServeMux
}

var (
	_ svc.WebHandler = (*frontend)(nil)
	_ svc.WebRouter  = (*frontend)(nil)
)

func newFrontend(d svc.Deps) (*frontend, error) {
	f := &frontend{
		ad:             pb.NewAdServiceClient(d.Conn(Ad)),
		cart:           pb.NewCartServiceClient(d.Conn(Cart)),
		catalog:        pb.NewProductCatalogServiceClient(d.Conn(ProductCatalog)),
		currency:       pb.NewCurrencyServiceClient(d.Conn(Currency)),
		recommendation: pb.NewRecommendationServiceClient(d.Conn(Recommendation)),
		shipping:       pb.NewShippingServiceClient(d.Conn(Shipping)),
		checkout:       pb.NewCheckoutServiceClient(d.Conn(Checkout)),
		mux:            http.NewServeMux(),
	}
	f.routes()
	return f, nil
}

// ---- the pages as RPCs ----

func currencyOf(in *pb.PageRequest) string {
	if in.GetCurrency() == "" {
		return DefaultCurrency
	}
	return in.GetCurrency()
}

// currencies are the shown currencies the currency service supports.
func (f *frontend) currencies(ctx context.Context) ([]string, error) {
	r, err := f.currency.GetSupportedCurrencies(ctx, &pb.Empty{})
	if err != nil {
		return nil, fmt.Errorf("currencies: %w", err)
	}
	var out []string
	for _, c := range r.GetCurrencyCodes() {
		if slices.Contains(shownCurrencies, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// cartSize is the number of units in the session's cart.
func (f *frontend) cartOf(ctx context.Context, session string) (*pb.Cart, int32, error) {
	c, err := f.cart.GetCart(ctx, &pb.GetCartRequest{UserId: session})
	if err != nil {
		return nil, 0, fmt.Errorf("cart: %w", err)
	}
	return c, int32(count(c.GetItems())), nil
}

func (f *frontend) price(ctx context.Context, p *pb.Product, cur string) (*pb.ProductView, error) {
	m, err := f.currency.Convert(ctx, &pb.CurrencyConversionRequest{From: p.GetPriceUsd(), ToCode: cur})
	if err != nil {
		return nil, fmt.Errorf("price of %s in %s: %w", p.GetId(), cur, err)
	}
	return &pb.ProductView{Item: p, Price: m}, nil
}

// chooseAd is one ad for the context, as the original shows; an ad
// service that fails costs the page its ad only.
func (f *frontend) chooseAd(ctx context.Context, keys []string) *pb.Ad {
	r, err := f.ad.GetAds(ctx, &pb.AdRequest{ContextKeys: keys})
	if err != nil || len(r.GetAds()) == 0 {
		return nil
	}
	return r.GetAds()[0]
}

func (f *frontend) Home(ctx context.Context, in *pb.PageRequest) (*pb.HomePage, error) {
	cur := currencyOf(in)
	out := &pb.HomePage{UserCurrency: cur}
	var err error
	if out.Currencies, err = f.currencies(ctx); err != nil {
		return nil, err
	}
	ps, err := f.catalog.ListProducts(ctx, &pb.Empty{})
	if err != nil {
		return nil, fmt.Errorf("products: %w", err)
	}
	if _, out.CartSize, err = f.cartOf(ctx, in.GetSessionId()); err != nil {
		return nil, err
	}
	for _, p := range ps.GetProducts() {
		v, err := f.price(ctx, p, cur)
		if err != nil {
			return nil, err
		}
		out.Products = append(out.Products, v)
	}
	out.Ad = f.chooseAd(ctx, nil)
	return out, nil
}

func (f *frontend) Product(ctx context.Context, in *pb.PageRequest) (*pb.ProductPage, error) {
	if in.GetProductId() == "" {
		return nil, status.Error(codes.InvalidArgument, "product id not specified")
	}
	cur := currencyOf(in)
	p, err := f.catalog.GetProduct(ctx, &pb.GetProductRequest{Id: in.GetProductId()})
	if err != nil {
		return nil, fmt.Errorf("product %s: %w", in.GetProductId(), err)
	}
	out := &pb.ProductPage{UserCurrency: cur}
	if out.Currencies, err = f.currencies(ctx); err != nil {
		return nil, err
	}
	if _, out.CartSize, err = f.cartOf(ctx, in.GetSessionId()); err != nil {
		return nil, err
	}
	if out.Product, err = f.price(ctx, p, cur); err != nil {
		return nil, err
	}
	if out.Recommendations, err = f.recommendations(ctx, in.GetSessionId(), []string{p.GetId()}); err != nil {
		return nil, err
	}
	out.Ad = f.chooseAd(ctx, p.GetCategories())
	return out, nil
}

// recommendations are up to four products recommended beside ids.
func (f *frontend) recommendations(ctx context.Context, session string, ids []string) ([]*pb.Product, error) {
	r, err := f.recommendation.ListRecommendations(ctx, &pb.ListRecommendationsRequest{UserId: session, ProductIds: ids})
	if err != nil {
		return nil, fmt.Errorf("recommendations: %w", err)
	}
	var out []*pb.Product
	for _, id := range r.GetProductIds()[:min(MaxPageRecommendations, len(r.GetProductIds()))] {
		p, err := f.catalog.GetProduct(ctx, &pb.GetProductRequest{Id: id})
		if err != nil {
			return nil, fmt.Errorf("recommended product %s: %w", id, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func (f *frontend) ViewCart(ctx context.Context, in *pb.PageRequest) (*pb.CartPage, error) {
	cur := currencyOf(in)
	out := &pb.CartPage{UserCurrency: cur}
	var err error
	if out.Currencies, err = f.currencies(ctx); err != nil {
		return nil, err
	}
	c, size, err := f.cartOf(ctx, in.GetSessionId())
	if err != nil {
		return nil, err
	}
	out.CartSize = size
	var ids []string
	for _, it := range c.GetItems() {
		ids = append(ids, it.GetProductId())
	}
	if out.Recommendations, err = f.recommendations(ctx, in.GetSessionId(), ids); err != nil {
		return nil, err
	}
	q, err := f.shipping.GetQuote(ctx, &pb.GetQuoteRequest{Items: c.GetItems()})
	if err != nil {
		return nil, fmt.Errorf("shipping quote: %w", err)
	}
	if out.ShippingCost, err = f.currency.Convert(ctx, &pb.CurrencyConversionRequest{From: q.GetCostUsd(), ToCode: cur}); err != nil {
		return nil, fmt.Errorf("shipping cost in %s: %w", cur, err)
	}
	total := []*pb.Money{out.ShippingCost}
	for _, it := range c.GetItems() {
		p, err := f.catalog.GetProduct(ctx, &pb.GetProductRequest{Id: it.GetProductId()})
		if err != nil {
			return nil, fmt.Errorf("product %s: %w", it.GetProductId(), err)
		}
		v, err := f.price(ctx, p, cur)
		if err != nil {
			return nil, err
		}
		line := times(v.GetPrice(), it.GetQuantity())
		out.Items = append(out.Items, &pb.CartLine{Item: p, Quantity: it.GetQuantity(), Price: line})
		total = append(total, line)
	}
	if out.TotalCost, err = sum(cur, total...); err != nil {
		return nil, err
	}
	return out, nil
}

func (f *frontend) AddToCart(ctx context.Context, in *pb.AddItemRequest) (*pb.Empty, error) {
	if _, err := f.catalog.GetProduct(ctx, &pb.GetProductRequest{Id: in.GetItem().GetProductId()}); err != nil {
		return nil, fmt.Errorf("product %s: %w", in.GetItem().GetProductId(), err)
	}
	if _, err := f.cart.AddItem(ctx, in); err != nil {
		return nil, fmt.Errorf("add to cart: %w", err)
	}
	return &pb.Empty{}, nil
}

func (f *frontend) EmptyCart(ctx context.Context, in *pb.EmptyCartRequest) (*pb.Empty, error) {
	if _, err := f.cart.EmptyCart(ctx, in); err != nil {
		return nil, fmt.Errorf("empty cart: %w", err)
	}
	return &pb.Empty{}, nil
}

func (f *frontend) PlaceOrder(ctx context.Context, in *pb.PlaceOrderRequest) (*pb.OrderPage, error) {
	r, err := f.checkout.PlaceOrder(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("checkout: %w", err)
	}
	total, err := orderTotal(r.GetOrder())
	if err != nil {
		return nil, err
	}
	return &pb.OrderPage{Order: r.GetOrder(), TotalPaid: total}, nil
}

// ---- the pages as HTML ----

// routes are the original frontend's.
func (f *frontend) routes() {
	f.mux.HandleFunc("GET /{$}", f.homePage)
	f.mux.HandleFunc("GET /product/{id}", f.productPage)
	f.mux.HandleFunc("GET /cart", f.cartPage)
	f.mux.HandleFunc("POST /cart", f.addToCart)
	f.mux.HandleFunc("POST /cart/empty", f.emptyCart)
	f.mux.HandleFunc("POST /cart/checkout", f.placeOrder)
	f.mux.HandleFunc("POST /setCurrency", f.setCurrency)
	f.mux.HandleFunc("GET /logout", f.logout)
}

// Route names the page r asks for by its route's pattern
// (svc.WebRouter), so that the host's metrics and spans count pages
// per route; "" for a path no route serves.
func (f *frontend) Route(r *http.Request) string {
	_, pattern := f.mux.Handler(r)
	return pattern
}

// ServeHTTP serves the pages, giving a new visitor a session cookie as the
// original's middleware does.
func (f *frontend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err != nil || c.Value == "" {
		id := uuid.NewString()
		http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", MaxAge: 48 * 3600})
		// Later cookies of this request see it too.
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: id})
	}
	f.mux.ServeHTTP(w, r)
}

func session(r *http.Request) string {
	c, _ := r.Cookie(SessionCookie)
	return c.Value
}

func userCurrency(r *http.Request) string {
	if c, err := r.Cookie(CurrencyCookie); err == nil && c.Value != "" {
		return c.Value
	}
	return DefaultCurrency
}

// view is what every page's template gets.
type view struct {
	Title, Session, Currency string
	Currencies               []string
	CartSize                 int32
	Page                     any
	Recommendations          []*pb.Product
	Quantities               []int
	NextYear                 int
}

func (f *frontend) render(w http.ResponseWriter, r *http.Request, name string, v view) {
	v.Session, v.Currency = session(r), userCurrency(r)
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, v); err != nil {
		f.fail(w, r, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// fail answers with the original's error page, with an HTTP status that
// follows the error's gRPC code.
func (f *frontend) fail(w http.ResponseWriter, _ *http.Request, err error) {
	code := http.StatusInternalServerError
	switch status.Code(err) {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		code = http.StatusBadRequest
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.Unavailable:
		code = http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		code = http.StatusGatewayTimeout
	}
	var b bytes.Buffer
	_ = pages.ExecuteTemplate(&b, "error", map[string]any{"Status": code, "StatusText": http.StatusText(code), "Error": err.Error()})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

func pageRequest(r *http.Request) *pb.PageRequest {
	return &pb.PageRequest{SessionId: session(r), Currency: userCurrency(r), ProductId: r.PathValue("id")}
}

func (f *frontend) homePage(w http.ResponseWriter, r *http.Request) {
	p, err := f.Home(r.Context(), pageRequest(r))
	if err != nil {
		f.fail(w, r, err)
		return
	}
	f.render(w, r, "home", view{Currencies: p.GetCurrencies(), CartSize: p.GetCartSize(), Page: p})
}

func (f *frontend) productPage(w http.ResponseWriter, r *http.Request) {
	p, err := f.Product(r.Context(), pageRequest(r))
	if err != nil {
		f.fail(w, r, err)
		return
	}
	f.render(w, r, "product", view{
		Title: p.GetProduct().GetItem().GetName(), Currencies: p.GetCurrencies(), CartSize: p.GetCartSize(),
		Page: p, Recommendations: p.GetRecommendations(), Quantities: []int{1, 2, 3, 4, 5, 10},
	})
}

func (f *frontend) cartPage(w http.ResponseWriter, r *http.Request) {
	p, err := f.ViewCart(r.Context(), pageRequest(r))
	if err != nil {
		f.fail(w, r, err)
		return
	}
	f.render(w, r, "cart", view{
		Title: "Cart", Currencies: p.GetCurrencies(), CartSize: p.GetCartSize(),
		Page: p, Recommendations: p.GetRecommendations(), NextYear: time.Now().Year() + 1,
	})
}

// addToCart is POST /cart with the form fields product_id and quantity
// (1 to 10 in the original's form); it redirects to the cart.
func (f *frontend) addToCart(w http.ResponseWriter, r *http.Request) {
	q, err := strconv.ParseUint(r.FormValue("quantity"), 10, 32)
	id := r.FormValue("product_id")
	if err != nil || q < 1 || q > MaxQuantity || id == "" {
		f.fail(w, r, status.Errorf(codes.InvalidArgument, "invalid form input: product_id %q, quantity %q (1 to %d)", id, r.FormValue("quantity"), MaxQuantity))
		return
	}
	if _, err := f.AddToCart(r.Context(), &pb.AddItemRequest{UserId: session(r), Item: &pb.CartItem{ProductId: id, Quantity: int32(q)}}); err != nil {
		f.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/cart", http.StatusFound)
}

func (f *frontend) emptyCart(w http.ResponseWriter, r *http.Request) {
	if _, err := f.EmptyCart(r.Context(), &pb.EmptyCartRequest{UserId: session(r)}); err != nil {
		f.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusFound)
}

// placeOrder is POST /cart/checkout with the original's form fields.
func (f *frontend) placeOrder(w http.ResponseWriter, r *http.Request) {
	num := func(k string) (int32, error) {
		v, err := strconv.ParseInt(r.FormValue(k), 10, 32)
		if err != nil {
			return 0, status.Errorf(codes.InvalidArgument, "form field %s: %q is not a number", k, r.FormValue(k))
		}
		return int32(v), nil
	}
	var errs []error
	field := func(k string) int32 {
		v, err := num(k)
		errs = append(errs, err)
		return v
	}
	in := &pb.PlaceOrderRequest{
		UserId: session(r), UserCurrency: userCurrency(r), Email: r.FormValue("email"),
		Address: &pb.Address{
			StreetAddress: r.FormValue("street_address"), City: r.FormValue("city"), State: r.FormValue("state"),
			Country: r.FormValue("country"), ZipCode: field("zip_code"),
		},
		CreditCard: &pb.CreditCardInfo{
			CreditCardNumber:          r.FormValue("credit_card_number"),
			CreditCardCvv:             field("credit_card_cvv"),
			CreditCardExpirationYear:  field("credit_card_expiration_year"),
			CreditCardExpirationMonth: field("credit_card_expiration_month"),
		},
	}
	if err := errors.Join(errs...); err != nil {
		f.fail(w, r, status.Error(codes.InvalidArgument, err.Error()))
		return
	}
	p, err := f.PlaceOrder(r.Context(), in)
	if err != nil {
		f.fail(w, r, err)
		return
	}
	cs, _ := f.currencies(r.Context())
	f.render(w, r, "order", view{Title: "Order", Currencies: cs, Page: p})
}

// setCurrency is POST /setCurrency with currency_code; it redirects back
// to the page the form was on, as the original does.
func (f *frontend) setCurrency(w http.ResponseWriter, r *http.Request) {
	if c := r.FormValue("currency_code"); c != "" {
		http.SetCookie(w, &http.Cookie{Name: CurrencyCookie, Value: c, Path: "/", MaxAge: 48 * 3600})
	}
	to := r.Header.Get("Referer")
	if to == "" {
		to = "/"
	}
	http.Redirect(w, r, to, http.StatusFound)
}

func (f *frontend) logout(w http.ResponseWriter, r *http.Request) {
	for _, c := range r.Cookies() {
		http.SetCookie(w, &http.Cookie{Name: c.Name, Path: "/", MaxAge: -1})
	}
	http.Redirect(w, r, "/", http.StatusFound)
}
