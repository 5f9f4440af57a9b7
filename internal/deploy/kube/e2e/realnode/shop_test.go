package realnode

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
)

// shopSpec is S1's shop, its gateway apart from products and orders,
// with its PostgreSQL as the backing Deployment the deployer renders.
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

[load]
mode = "open"
rate = 20
warmup = "2s"
duration = "8s"

[experiment]
name = "shop-realnode"
`

// TestShopWithPostgres: `svclab run` of the shop on the real node, its
// orders written to the PostgreSQL pod through the backing Service. The
// official postgres image cannot be pulled here (no registry is
// reachable); the test runs where it is in kubetest.ExtraImagesDir.
func TestShopWithPostgres(t *testing.T) {
	c := kubetest.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !c.HasImage(ctx, kube.PostgresImage) {
		t.Skipf("%s, the shop's backing PostgreSQL, is not in the node's containerd, and no registry is reachable from this machine: save it elsewhere (docker save %s -o postgres.tar) into %s, which the node imports at its start",
			kube.PostgresImage, kube.PostgresImage, kubetest.ExtraImagesDir())
	}
	run, _ := svclabRun(t, c, "shop-realnode", fmt.Sprintf(shopSpec, kubetest.Image))
	var sum summary
	readJSON(t, filepath.Join(run, "summary.json"), &sum)
	for _, op := range sum.Operations {
		if op.Name == "total" && (op.Count < 100 || op.Errors != 0) {
			t.Errorf("%d requests, %d failed; want about 160, none failed", op.Count, op.Errors)
		}
	}
}
