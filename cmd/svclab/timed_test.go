package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/svclab/svclab/internal/warn"
)

// The timed tests check a run's timing within a few hundred ms: a fault
// window, the seconds that fail inside it and recover after it, the
// requests several generators send. On this 2-core machine, beside the
// Kubernetes tests (four control planes starting, the real node's
// containerd, CNI, iptables and cgroups set up and torn down), a run's
// processes have been woken up to 0.7 s late, some seconds of a run
// answered in 250 ms instead of 1 ms, and a fault window ended 0.6 s late
// (make test, 2026-11-28 and 29); alone, or beside the same tests started
// by hand, the same checks passed every time. svclab's self-audit names
// some of these (host_late: a bare timer loop beside the generator woke
// late) but not those that delay only the system under test. So an
// attempt whose timing checks fail runs once more, and the test fails when
// the second fails too: a wrong window, share or count in svclab fails
// both. What the first attempt found is logged, with the host_late
// warnings of its runs.

// RetriesEnv names a file that each timed test that runs again appends
// its first attempt's findings to: make test prints it after the timed
// step, as go test shows a passing test's log only with -v.
const RetriesEnv = "SVCLAB_TIMED_RETRIES"

func noteRetry(t *testing.T, msg string) {
	path := os.Getenv(RetriesEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Logf("%s: %v", RetriesEnv, err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s: %s\n", t.Name(), msg)
}

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
// when its checks failed. What the second attempt finds wrong fails t.
func timedAttempts(t *testing.T, attempt func() (problems []string, late string)) {
	t.Helper()
	for i := range 2 {
		problems, late := attempt()
		if len(problems) == 0 {
			return
		}
		if i == 0 {
			if late == "" {
				late = "none"
			}
			msg := fmt.Sprintf("attempt 1 failed its timing checks, so it runs again (the host_late warnings of its runs: %s):\n%s", late, strings.Join(problems, "\n"))
			t.Log(msg)
			noteRetry(t, msg)
			continue
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// TestNoteRetry: each retry is appended to the file SVCLAB_TIMED_RETRIES
// names, under the test's name, for make test to print.
func TestNoteRetry(t *testing.T) {
	path := t.TempDir() + "/retries.txt"
	t.Setenv(RetriesEnv, path)
	noteRetry(t, "window 2.6–6.1 s")
	noteRetry(t, "0.0% errors inside the cut")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "TestNoteRetry: window 2.6–6.1 s\nTestNoteRetry: 0.0% errors inside the cut\n"; string(b) != want {
		t.Errorf("retries file:\n%s\nwant:\n%s", b, want)
	}
}
