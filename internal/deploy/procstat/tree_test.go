package procstat

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestTree runs a shell whose child burns CPU and exits: once the child
// is reaped, the parent alone holds almost no CPU time, and its tree holds
// the child's.
func TestTree(t *testing.T) {
	r, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; sleep 10 & echo done; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil { // the child has been reaped
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tree, err := r.Tree(cmd.Process.Pid).Sample(ctx)
		if err != nil {
			t.Fatal(err)
		}
		alone, err := r.Process(cmd.Process.Pid).Sample(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tree.CPUSeconds >= 0.05 {
			if alone.CPUSeconds >= tree.CPUSeconds/2 {
				t.Errorf("the parent alone holds %.2f s of the tree's %.2f s", alone.CPUSeconds, tree.CPUSeconds)
			}
			if kids, err := Children(cmd.Process.Pid); err != nil || len(kids) != 1 {
				t.Errorf("children %v, %v; want the one sleep", kids, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tree holds %.2f s of CPU, want the child's (≥ 0.05 s)", tree.CPUSeconds)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
