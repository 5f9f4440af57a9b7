package synth

import (
	"strings"
	"sync"
	"testing"
)

// TestFillGrowsToNeed: the text payloads are cut from holds what the
// answers asked for so far (to the next power of two), not a MiB up
// front, and never shrinks when answers of several sizes race.
func TestFillGrowsToNeed(t *testing.T) {
	fill.Store(nil)
	if got := text(100); len(got) != 100 || strings.Trim(got, "x") != "" {
		t.Fatalf("text(100) = %d bytes %.20q…", len(got), got)
	}
	if n := len(*fill.Load()); n != 128 {
		t.Errorf("after a 100-byte answer the fill is %d bytes, want 128", n)
	}
	var wg sync.WaitGroup
	for _, n := range []int{5000, 70_000, 300, 70_000, 5000} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := text(n); len(got) != n {
				t.Errorf("text(%d) is %d bytes", n, len(got))
			}
		}()
	}
	wg.Wait()
	if n := len(*fill.Load()); n != 1<<17 {
		t.Errorf("after answers up to 70,000 bytes the fill is %d bytes, want %d", n, 1<<17)
	}
	if got := text(maxFill + 1); len(got) != maxFill+1 || len(*fill.Load()) > maxFill {
		t.Errorf("text(%d) is %d bytes and the fill %d, want the fill at most %d", maxFill+1, len(got), len(*fill.Load()), maxFill)
	}
}
