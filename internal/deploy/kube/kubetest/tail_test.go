package kubetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestTailKeepsACrashsCause: a process's log as a failing test shows it
// ends with its last lines, and a Go crash whose stack runs past them
// keeps its cause and first frames ahead of them, as kwok's did once
// (its panic's message was cut, only the frames below it were left).
func TestTailKeepsACrashsCause(t *testing.T) {
	lines := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s %d", prefix, i))
		}
		return out
	}
	join := func(parts ...[]string) string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return strings.Join(all, "\n") + "\n"
	}
	crash := []string{"panic: runtime error: index out of range [3] with length 3", "", "goroutine 1 [running]:", "cel.NewEnv(...)"}
	frames := lines("frame", 30)
	for _, tc := range []struct {
		name, log string
		want      []string
	}{
		{"short log whole", join(lines("log", 5)), lines("log", 5)},
		{"long log, its last lines", join(lines("log", 50)), lines("log", 50)[30:]},
		{"crash past the last lines", join(lines("log", 10), crash, frames),
			append(append(append([]string{}, crash...), frames[:4]...), append([]string{"..."}, frames[10:]...)...)},
		{"crash within the last lines", join(lines("log", 30), crash, lines("frame", 10)),
			append(append([]string{"log 24", "log 25", "log 26", "log 27", "log 28", "log 29"}, crash...), lines("frame", 10)...)},
		{"fatal error", join([]string{"fatal error: concurrent map writes"}, frames),
			append(append([]string{"fatal error: concurrent map writes"}, frames[:7]...), append([]string{"..."}, frames[10:]...)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := tailOf(tc.log), strings.Join(tc.want, "\n"); got != want {
				t.Errorf("tail:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestStartTriesAgain: a start is tried again when a port it was given
// was taken, or when kwok (a fake, not a part under test) crashed; not
// when anything else exited, nor when kwok exited without a crash.
func TestStartTriesAgain(t *testing.T) {
	crash := "I1129 starting\npanic: runtime error: invalid memory address\n\ngoroutine 1 [running]:\nmain.main()\n"
	for _, tc := range []struct {
		name, proc, log string
		want            error
	}{
		{"kwok crashed", "kwok", crash, errFakeCrashed},
		{"kwok fatal error", "kwok", "fatal error: concurrent map writes\n", errFakeCrashed},
		{"kwok exited", "kwok", "E1129 unable to load config\n", nil},
		{"API server crashed", "kube-apiserver", crash, nil},
		{"port taken", "etcd", "listen tcp 127.0.0.1:2379: bind: address already in use\n", errPortTaken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := exitErrOf(tc.proc, errors.New("exit status 2"), tc.log)
			for _, sentinel := range []error{errFakeCrashed, errPortTaken} {
				if got := errors.Is(err, sentinel); got != (sentinel == tc.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, sentinel, got)
				}
			}
			if !strings.Contains(err.Error(), tc.proc+" exited") {
				t.Errorf("%v does not name %s", err, tc.proc)
			}
		})
	}
}
