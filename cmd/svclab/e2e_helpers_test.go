package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svclab/svclab/internal/tempdir"
)

// exitThresholds is the exit status of a run whose load.thresholds were
// broken, as the root command's help documents it.
const exitThresholds = 99

// svclabBin is the binary the end-to-end tests run: $SVCLAB_BIN (the
// Makefile sets it to bin/svclab) or one built once for this test binary.
var svclabBin string

// Most tests here call t.Parallel: they wait on svclab runs far more than
// they compute, so several at once take the package from minutes to about
// one. Those that measure time closely (a capacity found within 15%, the
// window's host timer, fault windows timed to a few hundred ms) do not, so
// go test runs them first, alone; make test runs them on a quiet machine
// (TIMED_CLI in the Makefile) and the rest beside other packages.
func TestMain(m *testing.M) {
	code := func() int {
		if b := os.Getenv("SVCLAB_BIN"); b != "" {
			svclabBin = b
			return m.Run()
		}
		// Under the process's owner-marked temp root, so that a killed
		// test binary's build is swept by the next svclab start.
		dir, err := tempdir.MkdirTemp("bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer tempdir.RemoveOwn()
		svclabBin = filepath.Join(dir, "svclab")
		out, err := exec.Command("go", "build", "-o", svclabBin, ".").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build svclab: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// svclab runs the binary to completion and returns stdout, stderr and the
// exit code.
func svclab(t *testing.T, ctx context.Context, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, svclabBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("svclab %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), code
}

// processesWithEnv lists the PIDs of live processes whose environment holds
// the exact entry kv; a test marks what it starts with a unique one.
func processesWithEnv(kv string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if string(v) == kv {
				if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && isZombie(st) {
					break
				}
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// waitNoProcesses waits up to d for every process marked kv to be gone.
func waitNoProcesses(t *testing.T, kv string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		pids := processesWithEnv(kv)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still alive %s after the kill: %v", d, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
