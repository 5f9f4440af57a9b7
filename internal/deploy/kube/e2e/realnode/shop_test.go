package realnode

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/svclab/svclab/apps/shop"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
)

// shopSpec is S1's shop, its gateway apart from products and orders,
// with its PostgreSQL as the backing Deployment the deployer renders, of
// the real node's stand-in image.
const shopSpec = `
[app]
name = "shop"
products = 100
stock = 100000000
pool_size = 5
op = "all"

[deploy]
deployer = "kube"
transport = "grpc"
placement = "s1"
start_timeout = "240s"

[deploy.placements]
s1 = [["gateway"], ["products", "orders"]]

[deploy.kube]
image = "%s"
generators = 2

[deploy.kube.backing_images]
postgres = "%s"

[load]
mode = "open"
rate = 20
warmup = "2s"
duration = "8s"

[experiment]
name = "shop-realnode"
`

// testShopWithPostgres: `svclab run` of the shop on the real node, its
// PostgreSQL one pod of the stand-in image (kubetest's, built from this
// machine's PostgreSQL: the official image cannot be pulled here), made
// from the app's setup SQL, which the products and orders pods reach
// through its Service. Every kind of request answers and passes the
// app's check of its answer: the list holds the seeded products, an
// order is written and read back.
func testShopWithPostgres(t *testing.T, c *kubetest.Cluster) {
	if c.PostgresImage == "" {
		t.Skip(c.NoPostgres)
	}
	run, _ := svclabRun(t, c, "shop-realnode", fmt.Sprintf(shopSpec, kubetest.Image, c.PostgresImage))
	var sum summary
	readJSON(t, filepath.Join(run, "summary.json"), &sum)
	counts := map[string]int{}
	for _, op := range sum.Operations {
		counts[op.Name] = op.Count
		if op.Errors != 0 {
			t.Errorf("%s: %d of %d requests failed", op.Name, op.Errors, op.Count)
		}
	}
	for _, op := range []string{shop.OpList, shop.OpGet, shop.OpOrder, shop.OpOrders} {
		if counts[op] == 0 {
			t.Errorf("no %s request answered (operations %v)", op, counts)
		}
	}
	// 20 req/s for 8 s, Poisson: about 160.
	if counts["total"] < 100 {
		t.Errorf("%d requests answered, want about 160 (20/s for 8 s)", counts["total"])
	}
}
