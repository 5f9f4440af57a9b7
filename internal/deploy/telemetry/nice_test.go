package telemetry

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNice: a program started by niceCommand runs at the nice
// value SVCLAB_BACKEND_NICE gives (0 when unset or out of range); messages
// name the program, not nice(1).
func TestNice(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1) on PATH")
	}
	for _, tc := range []struct {
		env  string
		want int
	}{{"", 0}, {"19", 19}, {"10", 10}, {"0", 0}, {"40", 0}} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(NiceEnv, tc.env)
			cmd := niceCommand(sleep, "10")
			if got := programName(cmd); got != sleep {
				t.Errorf("programName = %q, want %q", got, sleep)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			// nice(1) execs the program: wait until the pid runs sleep.
			deadline := time.Now().Add(5 * time.Second)
			for {
				b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "comm"))
				if strings.TrimSpace(string(b)) == "sleep" || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "stat"))
			if err != nil {
				t.Fatal(err)
			}
			// Fields after the command's closing parenthesis; nice is
			// the 19th field of the line, the 17th after it.
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if got, _ := strconv.Atoi(f[16]); got != tc.want {
				t.Errorf("nice %d, want %d (stat %s)", got, tc.want, b)
			}
		})
	}
}
