package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/load"
)

// shardDirs runs n generators of cfg in this process, started together,
// each writing its directory as a load pod's `svclab load --shard I/N
// --dir` does.
func shardDirs(t *testing.T, cfg load.Config, n int) []string {
	t.Helper()
	dirs := make([]string, n)
	errs := make([]error, n)
	start := time.Now().Add(200 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i] = t.TempDir()
		wg.Go(func() {
			sh := load.Shard{Index: i, Count: n}
			c := cfg.Share(sh)
			tg, err := load.NewTarget(c)
			if err != nil {
				errs[i] = err
				return
			}
			defer tg.Close()
			res, err := load.Run(context.Background(), c, tg, load.Options{Dir: dirs[i], Shard: sh, StartAt: start})
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Close()
			errs[i] = res.WriteShard(dirs[i], sh)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("generator %d: %v", i, err)
		}
	}
	return dirs
}

func summaryJSON(t *testing.T, res *load.Result) string {
	t.Helper()
	b, err := json.Marshal(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestResultsThroughPodLogs: generators' result directories that travel
// through pod logs (EmitResults, ReadResults), with the table the load
// command prints before them, merge to exactly what the directories
// themselves merge to, and the merged count is every generator's.
func TestResultsThroughPodLogs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	n := 3
	gens := n
	cfg := load.Config{Target: srv.URL, Rate: 300, Arrival: load.Poisson, Seed: 3,
		Duration: load.Duration(time.Second), Generators: &gens}
	dirs := shardDirs(t, cfg, n)

	var back []string
	for i, d := range dirs {
		var log bytes.Buffer
		log.WriteString("svclab load: generator 0/3: 100 arrivals/s\noperation  count  p50\ntotal      100    1.0ms\n")
		if err := EmitResults(&log, d, load.Shard{Index: i, Count: n}.String()); err != nil {
			t.Fatal(err)
		}
		dest := t.TempDir()
		shard, err := ReadResults(log.Bytes(), dest)
		if err != nil {
			t.Fatal(err)
		}
		if want := (load.Shard{Index: i, Count: n}).String(); shard != want {
			t.Errorf("shard %q, want %q", shard, want)
		}
		back = append(back, dest)
	}
	direct, err := load.Merge(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	viaLogs, err := load.Merge(back...)
	if err != nil {
		t.Fatal(err)
	}
	defer viaLogs.Close()
	if a, b := summaryJSON(t, direct), summaryJSON(t, viaLogs); a != b {
		t.Fatalf("merged through pod logs:\n%s\nmerged from the directories:\n%s", b, a)
	}
	var sum int64
	for _, d := range dirs {
		one, err := load.Merge(d)
		if err != nil {
			t.Fatal(err)
		}
		tot, _ := one.Op("total")
		sum += tot.Count
		one.Close()
	}
	tot, _ := viaLogs.Op("total")
	if tot.Count == 0 || tot.Count != sum {
		t.Fatalf("merged count %d, the generators' counts sum to %d", tot.Count, sum)
	}
}

func TestReadResultsRefuses(t *testing.T) {
	if _, err := ReadResults([]byte("panic: boom\ngoroutine 1 [running]:\n"), t.TempDir()); err == nil || !strings.Contains(err.Error(), "panic: boom") {
		t.Errorf("a log without results: %v, want an error quoting the log", err)
	}
	// A block whose tar names a file outside the directory.
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if err := EmitResults(&log, src, "0/1"); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	if _, err := ReadResults(log.Bytes(), dest); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResults(log.Bytes(), dest); err == nil {
		t.Error("unpacking over existing files worked; want an error (O_EXCL)")
	}
}
