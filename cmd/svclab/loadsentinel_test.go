package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/load"
)

// `svclab load` runs the timer loop beside its window as `svclab run`
// does, and with load.generators > 1 each generator runs its own, at its
// own share's gap: every audit is judged against its window's floor, by
// intervals, and no sentinel outlives the run.
func TestLoadRunsSentinels(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			srv := newCountingServer(t, 0)
			dir := t.TempDir()
			mark := marker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			stdout, stderr, code := svclab(t, ctx, []string{mark}, "load", "--generators", strconv.Itoa(n), "--rate", "200",
				"-d", "1500ms", "--arrival", "constant", "--dir", dir, srv.URL+"/")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			waitNoProcesses(t, mark, 5*time.Second)
			g := readSummary(t, dir).Generator
			if g == nil {
				t.Fatal("summary.json has no generator object")
			}
			audits := []load.Generator{*g}
			if n > 1 {
				audits = g.PerGenerator
			}
			if len(audits) != n {
				t.Fatalf("%d generator audits, want %d", len(audits), n)
			}
			// Each generator sends 200/n a second: its sentinel asks that gap.
			wantUs := 5000 * float64(n)
			for i, a := range audits {
				s, f := a.Sentinel, a.Floor
				if s == nil || len(s.IntervalsUs) != 1 || s.IntervalsUs[0] != wantUs || s.Samples < 30 {
					t.Errorf("generator %d: sentinel %+v, want wake-ups at %v µs", i, s, wantUs)
				}
				if f == nil || f.Source != load.FloorWindow || f.Note != "" || len(f.Intervals) != 2 {
					t.Errorf("generator %d: floor %+v, want the window's, with its p99 and p99.9 intervals", i, f)
				}
			}
		})
	}
}
