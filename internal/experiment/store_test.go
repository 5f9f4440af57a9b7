package experiment

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/svclab/svclab/internal/deploy"
	"github.com/svclab/svclab/internal/deploy/procstat"
	"github.com/svclab/svclab/internal/spec"
	"github.com/svclab/svclab/internal/tempdir"
)

func TestStoreCommitIsAtomic(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	st, err := CreateStore(root, ExperimentFile{Name: "demo", Seed: 7}, now)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(st.Dir) != "demo-20261122-100000" {
		t.Errorf("dir = %s", st.Dir)
	}
	// A second experiment in the same second gets its own directory.
	st2, err := CreateStore(root, ExperimentFile{Name: "demo"}, now)
	if err != nil || st2.Dir == st.Dir {
		t.Fatalf("second store %v, %v", st2, err)
	}

	w, err := st.BeginRun("r001-abc")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteJSON("run.json", map[string]string{"status": "ok"}); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Committed()
	if len(got) != 0 {
		t.Errorf("run visible before commit: %v", got)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Committed()
	if !got["r001-abc"] || len(got) != 1 {
		t.Errorf("committed = %v", got)
	}
	if _, err := os.Stat(filepath.Join(st.RunDir("r001-abc"), "run.json")); err != nil {
		t.Error(err)
	}

	// A run in flight when the process died leaves only a .tmp- directory,
	// which reopening removes.
	w2, _ := st.BeginRun("r002-def")
	_ = w2.WriteJSON("run.json", map[string]string{"status": "ok"})
	st3, ef, err := OpenStore(st.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if ef.Name != "demo" || ef.Seed != 7 {
		t.Errorf("experiment.json = %+v", ef)
	}
	if _, err := os.Stat(w2.Dir); !os.IsNotExist(err) {
		t.Errorf("unfinished run directory survived reopening: %v", err)
	}
	got, _ = st3.Committed()
	if len(got) != 1 {
		t.Errorf("committed after reopen = %v", got)
	}

	if _, _, err := OpenStore(t.TempDir()); err == nil {
		t.Error("OpenStore on an empty directory succeeded")
	}
}

func TestExperimentJSONRoundTrip(t *testing.T) {
	s := mustParse(t, `
[app]
name = "chain"
[experiment]
repetitions = 2
seed = 3
[experiment.factors]
"deploy.transport" = ["grpc", "http"]
`)
	p, err := NewPlan(context.Background(), s, 0, fixedTiming)
	if err != nil {
		t.Fatal(err)
	}
	ef := NewExperimentFile(p, "v1", "abc", time.Unix(0, 0))
	b, err := json.Marshal(ef)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	runs := back["runs"].([]any)
	if len(runs) != 4 || back["seed"].(float64) != 3 || back["spec_sha256"] != SpecHash(s) {
		t.Errorf("experiment.json = %s", b)
	}
	first := runs[0].(map[string]any)
	spec := first["spec"].(map[string]any)
	level := first["levels"].(map[string]any)["deploy.transport"]
	if spec["deploy"].(map[string]any)["transport"] != level {
		t.Errorf("effective spec %v does not carry level %v", spec, level)
	}
	host := back["host"].(map[string]any)
	if host["cores"].(float64) < 1 || host["go_version"] == "" || host["kernel"] == "" {
		t.Errorf("host = %v", host)
	}
}

func TestResourceSampler(t *testing.T) {
	proc, err := procstat.Open()
	if err != nil {
		t.Fatal(err)
	}
	rs := NewResourceSampler([]Sampled{
		{Process: deploy.ProcessInfo{Name: "self", PID: os.Getpid()}, Source: proc.Process(os.Getpid())},
		{Process: deploy.ProcessInfo{Name: "gone", PID: 1 << 30}, Source: proc.Process(1 << 30)},
	}, 50*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	rs.Start(ctx, start)
	// Burn 300 ms of CPU (by the kernel's count, however busy the machine
	// is) so the samples must show it.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0, x := cpu(), 0
	for cpu()-c0 < 300*time.Millisecond && time.Since(start) < 10*time.Second {
		for i := 0; i < 1e5; i++ {
			x++
		}
	}
	time.Sleep(120 * time.Millisecond) // one more sample after the burn
	cancel()
	rs.Wait() // the sample taken as the context ended is in
	rows := rs.Rows()
	if len(rows) < 4 {
		t.Fatalf("%d samples in %s at 50 ms", len(rows), time.Since(start))
	}
	for _, r := range rows {
		if r.Process != "self" || r.PID != int64(os.Getpid()) || r.RSSBytes <= 0 {
			t.Errorf("row %+v", r)
		}
	}
	// /proc counts in 10 ms ticks, and the first sample may land just
	// after the burn began.
	if used := CPUSeconds(rows, 0)["self"]; used < 0.25 {
		t.Errorf("CPU used = %.3f s over a 300 ms CPU burn (x=%d)", used, x)
	}
	rs.SetZero(start.Add(time.Second))
	if got := rs.Rows()[0].TS; got > -0.9 {
		t.Errorf("t_s after moving zero 1 s later = %.3f", got)
	}
	path := filepath.Join(t.TempDir(), "resources.parquet")
	if err := rs.WriteParquet(path); err != nil {
		t.Fatal(err)
	}
	back, err := parquet.ReadFile[ResourceRow](path)
	if err != nil || len(back) != len(rs.Rows()) {
		t.Errorf("read back %d rows, %v", len(back), err)
	}
}

// TestCleanStore: reopening a store removes the runs in flight of a dead
// svclab (or of one from before owner records), refuses to touch a run a
// live one is writing, and a committed run keeps no owner record.
func TestCleanStore(t *testing.T) {
	st, err := CreateStore(t.TempDir(), ExperimentFile{Name: "demo"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.BeginRun("r001-abc")
	if err != nil {
		t.Fatal(err)
	}
	if o, err := tempdir.ReadOwner(w.Dir); err != nil || o != tempdir.Self() {
		t.Fatalf("run in flight: owner %v, %v", o, err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(st.RunDir("r001-abc"), tempdir.OwnerFile)); !os.IsNotExist(err) {
		t.Errorf("the committed run kept its owner record: %v", err)
	}

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	inFlight := func(id string, owner int) string {
		d := filepath.Join(st.Dir, "runs", tmpPrefix+id)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if owner > 0 {
			os.WriteFile(filepath.Join(d, tempdir.OwnerFile), []byte(strconv.Itoa(owner)+" 0\n"), 0o644)
		}
		return d
	}
	deadRun := inFlight("r002-def", dead.Process.Pid)
	oldRun := inFlight("r003-fed", 0)
	removed, err := CleanStore(st.Dir)
	slices.Sort(removed)
	if err != nil || !slices.Equal(removed, []string{deadRun, oldRun}) {
		t.Errorf("CleanStore removed %q, %v; want %q", removed, err, []string{deadRun, oldRun})
	}

	liveRun := inFlight("r004-aaa", live.Process.Pid)
	if _, _, err := OpenStore(st.Dir); err == nil || !strings.Contains(err.Error(), "is being written by svclab pid "+strconv.Itoa(live.Process.Pid)+", which is still running") {
		t.Errorf("OpenStore with a live writer: %v", err)
	}
	if _, err := os.Stat(liveRun); err != nil {
		t.Errorf("a live svclab's run was touched: %v", err)
	}
}

// TestPlannedStoreWritesTheSameFile: the runner writes experiment.json run
// by run (createPlannedStore), and the file is the one NewExperimentFile
// encodes at once, byte for byte, whatever the number of runs listed.
func TestPlannedStoreWritesTheSameFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
	}{
		{"runs", "# <b> & \"quotes\"\n[app]\nname = \"chain\"\n[load]\nrate = 10\nduration = \"1s\"\n[experiment]\nrepetitions = 2\n[experiment.factors]\n\"deploy.transport\" = [\"grpc\", \"http\"]\n\"app.payload\" = [\"small\", \"large\"]\n"},
		{"one run", "[app]\nname = \"chain\"\n[load]\nrate = 10\nduration = \"1s\"\n"},
		{"sequential", "[app]\nname = \"chain\"\n[load]\nrate = 10\nduration = \"1s\"\n[experiment]\nuntil = \"decided\"\nmax_runs = 20\n[experiment.factors]\n\"app.payload\" = [\"small\", \"large\"]\n[[experiment.questions]]\neffect = \"app.payload\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("x.toml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := PlanRun(context.Background(), s, 1)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Unix(1700000000, 0)
			whole := NewExperimentFile(p, "v1", "abc", now)
			ef, n := experimentHeader(p, "v1", "abc", now)
			ef.Machine, whole.Machine = Machine{}, Machine{}
			root := t.TempDir()
			a, err := CreateStore(filepath.Join(root, "a"), whole, now)
			if err != nil {
				t.Fatal(err)
			}
			b, err := createPlannedStore(filepath.Join(root, "b"), ef, p, n, now)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(filepath.Join(a.Dir, "experiment.json"))
			got, _ := os.ReadFile(filepath.Join(b.Dir, "experiment.json"))
			if string(got) != string(want) || len(whole.Runs) != n {
				t.Errorf("run by run (%d bytes) differs from at once (%d bytes, %d runs listed of %d):\n%s\nwant\n%s", len(got), len(want), len(whole.Runs), n, got, want)
			}
		})
	}
}

// TestResourceSamplerBracketsTheWindow: the sampler ticks on whole
// intervals from the measurement's start, not from its own, and samples
// once more as its context ends, so the window's CPU is read between
// samples at its edges.
func TestResourceSamplerBracketsTheWindow(t *testing.T) {
	proc, err := procstat.Open()
	if err != nil {
		t.Fatal(err)
	}
	rs := NewResourceSampler([]Sampled{
		{Process: deploy.ProcessInfo{Name: "self", PID: os.Getpid()}, Source: proc.Process(os.Getpid())},
	}, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Ticking from its own start, the sampler would sample at -0.5 s and
	// 0.5 s of the window: none near 0.
	zero := time.Now().Add(500 * time.Millisecond)
	rs.Start(ctx, zero)
	time.Sleep(time.Until(zero.Add(1300 * time.Millisecond)))
	end := time.Since(zero).Seconds()
	cancel()
	rs.Wait()
	rows := rs.Rows()
	var ts []float64
	for _, r := range rows {
		ts = append(ts, r.TS)
	}
	// A timer never fires early; a busy machine may wake it late.
	if !slices.ContainsFunc(ts, func(t float64) bool { return t >= 0 && t < 0.3 }) {
		t.Errorf("samples at t_s %v: none in [0, 0.3) s, at the measurement's start", ts)
	}
	if !slices.ContainsFunc(ts, func(t float64) bool { return t >= 1 && t < 1.3 }) {
		t.Errorf("samples at t_s %v: none in [1, 1.3) s, a whole interval after the start", ts)
	}
	if last := ts[len(ts)-1]; last < end {
		t.Errorf("samples at t_s %v: the last is before the context ended at %.3f s", ts, end)
	}
}

func TestNextTick(t *testing.T) {
	phase := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		now  time.Duration // from phase
		want time.Duration
	}{
		{"long before the phase", -2500 * time.Millisecond, -2 * time.Second},
		{"just before", -time.Nanosecond, 0},
		{"on a tick", 0, time.Second},
		{"between ticks", 1500 * time.Millisecond, 2 * time.Second},
		{"on a later tick", 3 * time.Second, 4 * time.Second},
		{"a whole interval before", -time.Second, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := nextTick(phase.Add(c.now), phase, time.Second)
			if want := phase.Add(c.want); !got.Equal(want) {
				t.Errorf("nextTick(phase%+v) = phase%+v, want phase%+v", c.now, got.Sub(phase), c.want)
			}
		})
	}
}
