package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/spec"
)

// fuzzBudget is how long one input may plan before its context ends, and
// fuzzGrace how much longer it may take to notice: an input that overruns
// both hangs svclab as surely as a panic crashes it.
const (
	fuzzBudget = time.Second
	fuzzGrace  = 5 * time.Second
)

// FuzzSpec drives arbitrary spec text and one --set assignment through
// parse, validate and resolve (spec.Parse, PlanRun), and checks
// that nothing panics or hangs, that every error is located and readable,
// and that every accepted plan keeps within experiment.max_runs. The seeds
// are the shipped experiments, the bad-spec corpus, and the inputs under
// testdata/fuzz/FuzzSpec that once hung.
func FuzzSpec(f *testing.F) {
	files, _ := filepath.Glob("../../experiments/*.toml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, "")
		}
	}
	for _, tc := range badSpecs {
		set := ""
		if len(tc.sets) > 0 {
			set = tc.sets[0]
		}
		f.Add([]byte(tc.src), set)
	}
	f.Fuzz(func(t *testing.T, src []byte, set string) {
		ctx, cancel := context.WithTimeout(context.Background(), fuzzBudget)
		defer cancel()
		type result struct {
			plan *Plan
			err  error
		}
		done := make(chan result, 1)
		go func() {
			var sets []string
			if set != "" {
				sets = []string{set}
			}
			s, err := spec.Parse("fuzz.toml", src, sets...)
			if err != nil {
				done <- result{err: err}
				return
			}
			p, _, err := PlanRun(ctx, s, 1)
			if err == nil && len(p.Runs) > 0 {
				// What planning checked, the runner prepares again.
				if _, perr := p.Prepare(p.Runs[len(p.Runs)-1]); perr != nil {
					err = fmt.Errorf("a run checked while planning does not prepare: %w", perr)
				}
			}
			done <- result{plan: p, err: err}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(fuzzBudget + fuzzGrace):
			t.Fatalf("planning ran past its context by more than %v: it hangs on this input", fuzzGrace)
		}
		if r.err != nil {
			checkFuzzError(t, r.err)
			return
		}
		e := r.plan.Spec.Experiment
		if len(r.plan.Runs) > e.MaxRuns || len(r.plan.Runs) != len(r.plan.Design.Points)*r.plan.Repetitions {
			t.Errorf("%d runs from %d points × %d repetitions with max_runs %d", len(r.plan.Runs), len(r.plan.Design.Points), r.plan.Repetitions, e.MaxRuns)
		}
		if r.plan.Estimate() < 0 {
			t.Errorf("negative estimate %v", r.plan.Estimate())
		}
	})
}

// checkFuzzError checks what a user would read: a message that is not
// empty and whose every line is short enough to read, whatever the input
// echoed.
func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, context.DeadlineExceeded) {
		return // a large design planned past its budget, and stopped
	}
	msg := err.Error()
	if strings.TrimSpace(msg) == "" {
		t.Fatalf("empty error %#v", err)
	}
	for _, line := range strings.Split(msg, "\n") {
		if n := len([]rune(line)); n > 5000 {
			t.Errorf("an error line of %d characters: %.200q", n, line)
		}
	}
}
