package realnode

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/deploy/kube/kubetest"
)

// s2Chain is S2's chain (3 hops, grpc, split) on the real node, its load
// sent by the load Job's 2 generator pods.
const s2Chain = `
[app]
name = "chain"
hops = 3
payload = "small"

[deploy]
deployer = "kube"
transport = "grpc"
placement = "split"
start_timeout = "180s"

[deploy.kube]
image = "%s"
generators = 2

[load]
mode = "open"
arrival = "poisson"
rate = 40
warmup = "2s"
duration = "8s"

[experiment]
name = "s2-realnode"
`

// summary is the part of a run's summary.json the test reads.
type summary struct {
	Operations []struct {
		Name   string `json:"name"`
		Count  int    `json:"count"`
		Errors int    `json:"errors"`
	} `json:"operations"`
}

type runRecord struct {
	Status    string `json:"status"`
	Reason    string `json:"reason"`
	Generator struct {
		Generators []struct {
			Sends int `json:"sends"`
		} `json:"generators"`
	} `json:"generator"`
}

// testS2ChainRun: `svclab run` of S2's chain with deploy.deployer = "kube"
// on the real node: the three hops' pods start from the imported image,
// the load Job's two generators call hop1's Service by its DNS name,
// hop1 calls hop2 and hop2 hop3 through theirs (kube-proxy, the CNI
// bridge), every request answers, and the two generators' results come
// back through their logs and are merged.
func testS2ChainRun(t *testing.T, c *kubetest.Cluster) {
	run, out := svclabRun(t, c, "s2-realnode", fmt.Sprintf(s2Chain, kubetest.Image))
	var rec runRecord
	readJSON(t, filepath.Join(run, "run.json"), &rec)
	if n := len(rec.Generator.Generators); n != 2 {
		t.Errorf("%d generators in run.json, want the load Job's 2", n)
	}
	for i, g := range rec.Generator.Generators {
		if g.Sends == 0 {
			t.Errorf("generator %d/2 sent nothing", i)
		}
	}
	var sum summary
	readJSON(t, filepath.Join(run, "summary.json"), &sum)
	total := -1
	for _, op := range sum.Operations {
		if op.Name == "total" {
			total = op.Count
			if op.Errors != 0 {
				t.Errorf("%d of %d requests failed", op.Errors, op.Count)
			}
		}
	}
	// 40 req/s for 8 s, Poisson: about 320.
	if total < 200 {
		t.Errorf("%d requests answered, want about 320 (40/s for 8 s)", total)
	}
	if !strings.Contains(string(out), "1 ok") {
		t.Errorf("svclab run did not report its run ok")
	}
}

// svclabRun runs `svclab run` of the spec src, named experiment name, on
// c's cluster and returns its one run's directory, which it checks is
// ok, and svclab's output.
func svclabRun(t *testing.T, c *kubetest.Cluster, name, src string) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	specPath := filepath.Join(dir, name+".toml")
	if err := os.WriteFile(specPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kubetest.SvclabBin(t), "run", specPath)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("svclab run took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("svclab run: %v", err)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "results", name+"-*", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v, want one", runs)
	}
	var rec runRecord
	readJSON(t, filepath.Join(runs[0], "run.json"), &rec)
	if rec.Status != "ok" {
		t.Fatalf("run %s: %s", rec.Status, rec.Reason)
	}
	return runs[0], out
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
