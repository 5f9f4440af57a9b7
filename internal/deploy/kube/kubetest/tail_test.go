package kubetest

import (
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
