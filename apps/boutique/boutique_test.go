package boutique

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/spec"
	pb "github.com/svclab/svclab/proto/boutique"
)

// Expected conversions are exact rationals floored to a nano, computed
// with Python's fractions.Fraction from currency_conversion.json's rates.
func TestConvert(t *testing.T) {
	r, err := loadRates()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from *pb.Money
		to   string
		want *pb.Money
	}{
		{money("USD", 19_990_000_000), "EUR", &pb.Money{CurrencyCode: "EUR", Units: 17, Nanos: 682441397}},
		{money("USD", 19_990_000_000), "JPY", &pb.Money{CurrencyCode: "JPY", Units: 2235, Nanos: 60592658}},
		{money("USD", ShippingUSD), "GBP", &pb.Money{CurrencyCode: "GBP", Units: 6, Nanos: 836535161}},
		{money("USD", 19_990_000_000), "USD", &pb.Money{CurrencyCode: "USD", Units: 19, Nanos: 990000000}},
		{money("EUR", 0), "TRY", &pb.Money{CurrencyCode: "TRY"}},
	} {
		got, err := r.convert(c.from, c.to)
		if err != nil {
			t.Fatalf("convert %s to %s: %v", show(c.from), c.to, err)
		}
		if got.GetCurrencyCode() != c.want.GetCurrencyCode() || got.GetUnits() != c.want.GetUnits() || got.GetNanos() != c.want.GetNanos() {
			t.Errorf("convert %s to %s = %v, want %v", show(c.from), c.to, got, c.want)
		}
	}
	for _, bad := range []struct {
		from *pb.Money
		to   string
	}{
		{money("XXX", 1), "EUR"},
		{money("USD", 1), "XXX"},
		{&pb.Money{CurrencyCode: "USD", Units: 1, Nanos: -5}, "EUR"},
		{&pb.Money{CurrencyCode: "USD", Nanos: 1_000_000_000}, "EUR"},
	} {
		if _, err := r.convert(bad.from, bad.to); err == nil {
			t.Errorf("convert %v to %s: no error", bad.from, bad.to)
		}
	}
	if got := len(r.codes()); got != 33 {
		t.Errorf("%d currencies, want the table's 33", got)
	}
}

func TestMoney(t *testing.T) {
	// 2 × 18.99 + 8.99 = 46.97
	got, err := sum("USD", times(money("USD", 18_990_000_000), 2), money("USD", ShippingUSD))
	if err != nil || got.GetUnits() != 46 || got.GetNanos() != 970_000_000 {
		t.Errorf("2 × 18.99 + 8.99 = %v, %v; want USD 46.97", got, err)
	}
	if _, err := sum("USD", money("EUR", 1)); err == nil {
		t.Error("sum of EUR in USD: no error")
	}
	if s := show(money("EUR", 17_682_441_397)); s != "EUR 17.68" {
		t.Errorf("show = %q, want EUR 17.68", s)
	}
}

func TestCheckCard(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	card := func(n string, y, m int32) *pb.CreditCardInfo {
		return &pb.CreditCardInfo{CreditCardNumber: n, CreditCardExpirationYear: y, CreditCardExpirationMonth: m, CreditCardCvv: 672}
	}
	for _, c := range []struct {
		name string
		cc   *pb.CreditCardInfo
		want error // nil: accepted
	}{
		{"visa with dashes", card("4432-8015-6152-0454", 2027, 1), nil},
		{"mastercard", card("5555555555554444", 2030, 12), nil},
		{"this month", card("4432801561520454", 2026, 11), nil},
		{"bad check digit", card("4432801561520455", 2027, 1), ErrCardInvalid},
		{"letters", card("4432-8015-6152-04x4", 2027, 1), ErrCardInvalid},
		{"too short", card("42", 2027, 1), ErrCardInvalid},
		{"amex", card("378282246310005", 2027, 1), ErrCardAccepted},
		{"last month", card("4432801561520454", 2026, 10), ErrCardExpired},
		{"month 13", card("4432801561520454", 2027, 13), ErrCardInvalid},
	} {
		err := checkCard(c.cc, now)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: checkCard = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestData(t *testing.T) {
	cat, err := loadCatalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.products) != 9 {
		t.Fatalf("%d products, want the original's 9", len(cat.products))
	}
	p := cat.byID["66VCHSJNUP"]
	if p.GetName() != "Tank Top" || p.GetPriceUsd().GetUnits() != 18 || p.GetPriceUsd().GetNanos() != 990_000_000 {
		t.Errorf("66VCHSJNUP = %v, want Tank Top at USD 18.99", p)
	}
	byCat, all, err := loadAds()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 7 || len(byCat["kitchen"]) != 2 {
		t.Errorf("%d ads, %d for kitchen; want the original's 7 and 2", len(all), len(byCat["kitchen"]))
	}
	// Every ad leads to a product of the catalogue.
	for _, a := range all {
		if _, ok := cat.byID[strings.TrimPrefix(a.GetRedirectUrl(), "/product/")]; !ok {
			t.Errorf("ad %q leads to %s, not a product", a.GetText(), a.GetRedirectUrl())
		}
	}
}

func TestRecommendationsExcludeAsked(t *testing.T) {
	cat, err := loadCatalogue()
	if err != nil {
		t.Fatal(err)
	}
	r := &recommendation{catalog: localCatalog{&productCatalog{cat: cat}}}
	asked := []string{"OLJCESPC7Z", "66VCHSJNUP", "1YMWWN1N4O", "L9ECAV7KIM", "2ZYFJ3GM2N"}
	for range 20 {
		got, err := r.ListRecommendations(context.Background(), &pb.ListRecommendationsRequest{ProductIds: asked})
		if err != nil {
			t.Fatal(err)
		}
		// 9 products, 5 asked: exactly the other 4.
		if len(got.GetProductIds()) != 4 {
			t.Fatalf("%d recommendations, want the 4 not asked", len(got.GetProductIds()))
		}
		for _, id := range got.GetProductIds() {
			if _, ok := cat.byID[id]; !ok || strings.Contains(strings.Join(asked, " "), id) {
				t.Fatalf("recommended %s, which is asked or unknown", id)
			}
		}
	}
}

func TestConfigErrors(t *testing.T) {
	c := &Config{CartStore: "disk", RedisPool: 0, OrderIDs: "random", Op: "buy"}
	err := c.Validate()
	for _, key := range []string{"cart_store", "redis_pool", "order_ids", "op"} {
		var ke *spec.KeyError
		found := false
		for _, e := range unjoin(err) {
			found = found || errors.As(e, &ke) && ke.Key == key
		}
		if !found {
			t.Errorf("Validate() = %v: no error about %s", err, key)
		}
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
