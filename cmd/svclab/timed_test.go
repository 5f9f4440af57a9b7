package main

import (
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/warn"
)

// The timed tests check a run's timing within a few hundred ms: a fault
// window, the seconds that fail inside it and recover after it, the
// requests several generators send. On this 2-core machine, beside the
// Kubernetes tests' start, the host has woken a run's processes up to
// 0.7 s late (make test, 2026-11-29), and such a check then measures the
// machine, not svclab. svclab's own self-audit says so: a bare timer loop
// beside the generator woke late (run.json's host_late warning, docs/LOAD.md
// "The generator's self-audit"). Only then is an attempt tried once more.

// hostLate returns a run's host_late warnings, joined; "" when its
// self-audit found the host on time.
func hostLate(ws []warn.Warning) string {
	var late []string
	for _, w := range ws {
		if w.Kind == warn.HostLate {
			late = append(late, w.Text)
		}
	}
	return strings.Join(late, "; ")
}

// timedAttempts runs attempt, which returns what its timing checks found
// wrong and the host_late warnings of its runs, at most twice: again only
// when its checks failed and the host was late. What the last attempt
// found wrong fails t.
func timedAttempts(t *testing.T, attempt func() (problems []string, late string)) {
	t.Helper()
	for i := range 2 {
		problems, late := attempt()
		if len(problems) == 0 {
			return
		}
		if i == 0 && late != "" {
			t.Logf("attempt 1 failed its timing checks with the host late, so it runs again: %s\n%s", late, strings.Join(problems, "\n"))
			continue
		}
		for _, p := range problems {
			t.Error(p)
		}
		return
	}
}
