package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if !c.HasImage(ctx, kube.PostgresImage) {
		t.Skipf("%s, the shop's backing PostgreSQL, is not in the node's containerd, and no registry is reachable from this machine: save it elsewhere (docker save %s -o postgres.tar) into %s, which the node imports at its start",
			kube.PostgresImage, kube.PostgresImage, kubetest.ExtraImagesDir())
	}
	bin := svclabBin(t)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "shop.toml")
	if err := os.WriteFile(specPath, []byte(fmt.Sprintf(shopSpec, kubetest.Image)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "run", specPath)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	out, err := cmd.CombinedOutput()
	t.Logf("svclab run:\n%s", out)
	if err != nil {
		t.Fatalf("svclab run: %v", err)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "results", "shop-realnode-*", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v, want one", runs)
	}
	var rec runRecord
	readJSON(t, filepath.Join(runs[0], "run.json"), &rec)
	if rec.Status != "ok" {
		t.Fatalf("run %s: %s", rec.Status, rec.Reason)
	}
	var sum summary
	readJSON(t, filepath.Join(runs[0], "summary.json"), &sum)
	for _, op := range sum.Operations {
		if op.Name == "total" && (op.Count < 100 || op.Errors != 0) {
			t.Errorf("%d requests, %d failed; want about 160, none failed", op.Count, op.Errors)
		}
	}
}
