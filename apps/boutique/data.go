package boutique

import (
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/svclab/svclab/proto/boutique"
)

// The original's data files: products.json of productcatalogservice and
// currency_conversion.json of currencyservice, unchanged (Apache 2.0,
// GoogleCloudPlatform/microservices-demo), and the adservice's ads, which
// the original keeps in Java code, as a file of the same form.
//
//go:embed data/products.json data/currency_conversion.json data/ads.json
var dataFS embed.FS

// catalogue is products.json, read once.
type catalogue struct {
	products []*pb.Product
	byID     map[string]*pb.Product
}

func loadCatalogue() (*catalogue, error) {
	b, err := dataFS.ReadFile("data/products.json")
	if err != nil {
		return nil, err
	}
	var list pb.ListProductsResponse
	if err := protojson.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("data/products.json: %w", err)
	}
	c := &catalogue{products: list.GetProducts(), byID: map[string]*pb.Product{}}
	for _, p := range c.products {
		c.byID[p.GetId()] = p
	}
	return c, nil
}

// rates is currency_conversion.json: units of each currency per euro, as
// exact decimals.
type rates map[string]*big.Rat

func loadRates() (rates, error) {
	b, err := dataFS.ReadFile("data/currency_conversion.json")
	if err != nil {
		return nil, err
	}
	var raw map[string]string
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("data/currency_conversion.json: %w", err)
	}
	out := rates{}
	for code, v := range raw {
		r, ok := new(big.Rat).SetString(v)
		if !ok || r.Sign() <= 0 {
			return nil, fmt.Errorf("data/currency_conversion.json: %s: bad rate %q", code, v)
		}
		out[code] = r
	}
	return out, nil
}

// codes are the supported currency codes, sorted.
func (r rates) codes() []string { return slices.Sorted(maps.Keys(r)) }

// loadAds reads data/ads.json: the ads of each category, and all of them.
func loadAds() (map[string][]*pb.Ad, []*pb.Ad, error) {
	b, err := dataFS.ReadFile("data/ads.json")
	if err != nil {
		return nil, nil, err
	}
	var raw map[string][]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("data/ads.json: %w", err)
	}
	byCat := map[string][]*pb.Ad{}
	var all []*pb.Ad
	for _, cat := range slices.Sorted(maps.Keys(raw)) {
		for _, m := range raw[cat] {
			var ad pb.Ad
			if err := protojson.Unmarshal(m, &ad); err != nil {
				return nil, nil, fmt.Errorf("data/ads.json: %s: %w", cat, err)
			}
			byCat[cat] = append(byCat[cat], &ad)
			all = append(all, &ad)
		}
	}
	return byCat, all, nil
}
