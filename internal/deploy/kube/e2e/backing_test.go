package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/kube"
	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
	"github.com/svclab/svclab/internal/spec"
)

// shopSpec is the shop with its PostgreSQL, in a namespace of the test's
// own, its database's image %s.
const shopSpec = `
[app]
name = "shop"

[deploy]
deployer = "kube"
transport = "grpc"
placement = "split"
start_timeout = "%s"

[deploy.kube]
image = "registry.example/svclab:test"
namespace = "%s"

[deploy.kube.backing_images]
postgres = "%s"
`

// TestBackingRollsOutFirst: the hosts that use a backing service are
// applied only once its Deployment has rolled out (a shop host exits
// while its database does not answer, and would restart with the
// kubelet's back-off): with a database that never becomes ready, no
// host's Deployment is ever made and the rollout's failure names the
// database's; with one that does, every host follows.
func TestBackingRollsOutFirst(t *testing.T) {
	t.Parallel()
	c := kubetest.Get(t)
	for _, tc := range []struct {
		name, image, timeout string
		ok                   bool
	}{
		{"never ready", kubetest.NeverReadyImage, "8s", false},
		{"ready", "registry.example/postgres:16", "60s", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := "backing-first-" + strings.ReplaceAll(tc.name, " ", "-")
			s, err := spec.Parse(filepath.Join(t.TempDir(), "shop.toml"), []byte(fmt.Sprintf(shopSpec, tc.timeout, ns, tc.image)))
			if err != nil {
				t.Fatal(err)
			}
			_, topo, err := deploy.Resolve(s)
			if err != nil {
				t.Fatal(err)
			}
			// Every Deployment seen in the namespace while the deploy runs.
			var (
				mu   sync.Mutex
				seen = map[string]bool{}
			)
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			look := func(ctx context.Context) {
				if list, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err == nil {
					mu.Lock()
					for _, d := range list.Items {
						seen[d.Name] = true
					}
					mu.Unlock()
				}
			}
			go func() {
				defer close(done)
				for ctx.Err() == nil {
					look(ctx)
					time.Sleep(100 * time.Millisecond)
				}
			}()
			d, _ := deploy.Lookup(kube.Name)
			dep, err := d.Deploy(context.Background(), topo, deploy.Options{})
			stop()
			<-done
			// A deploy that worked left its objects for a last look (one
			// that failed deleted its namespace).
			look(context.Background())
			if dep != nil {
				defer dep.Stop(context.Background())
			}
			names := slices.Sorted(maps.Keys(seen))
			t.Logf("deploy: %v; Deployments seen: %v", err, names)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("deploy: %v", err)
			case tc.ok:
				if !slices.Equal(names, []string{"backing-db", "gateway", "orders", "products"}) {
					t.Errorf("Deployments %v, want the database's and the three hosts'", names)
				}
			case err == nil:
				t.Fatal("the deploy worked with a database that is never ready")
			default:
				if !slices.Equal(names, []string{"backing-db"}) {
					t.Errorf("Deployments %v made while the database was not ready, want only backing-db", names)
				}
				if !strings.Contains(err.Error(), "deployment backing-db: 0 of 1 replicas available") {
					t.Errorf("the failure does not name the database's Deployment: %v", err)
				}
			}
		})
	}
}
