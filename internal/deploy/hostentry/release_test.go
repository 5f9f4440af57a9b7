package hostentry

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// exeRSS sums, over the test binary's own mappings, the resident kB of
// those that cannot be written and of those that can.
func exeRSS(t *testing.T) (readOnly, writable int) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var into *int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			into = nil
			if ino, _ := strconv.ParseUint(fs[4], 10, 64); ino == st.Ino {
				into = &readOnly
				if fs[1][1] == 'w' {
					into = &writable
				}
			}
		case into != nil && fs[0] == "Rss:":
			kb, _ := strconv.Atoi(fs[1])
			*into += kb
		}
	}
	return readOnly, writable
}

// written is set at run time: if the writable mapping it lives in were
// dropped, it would read its value in the file again.
var written = 1

// TestDropReadOnlyPages: the executable's read-only pages that start-up
// mapped are dropped (the code running maps back the few it needs), and
// its writable mappings, with what the process wrote there, stay.
func TestDropReadOnlyPages(t *testing.T) {
	written = 42
	roBefore, wBefore := exeRSS(t)
	if err := dropReadOnlyPages("/proc/self/smaps", "/proc/self/exe"); err != nil {
		t.Fatal(err)
	}
	roAfter, wAfter := exeRSS(t)
	t.Logf("the executable's resident read-only pages: %d kB before, %d kB after; writable %d kB, %d kB", roBefore, roAfter, wBefore, wAfter)
	if roAfter*2 > roBefore {
		t.Errorf("read-only pages resident: %d kB before, %d kB after; want less than half", roBefore, roAfter)
	}
	if wAfter < wBefore {
		t.Errorf("writable pages resident: %d kB before, %d kB after; want them kept", wBefore, wAfter)
	}
	if written != 42 {
		t.Errorf("a variable written before the drop reads %d, want 42", written)
	}
	if err := dropReadOnlyPages("/proc/self/smaps", "/nonexistent"); err == nil || !strings.Contains(err.Error(), "/nonexistent") {
		t.Errorf("an executable that is not there: %v, want an error naming it", err)
	}
}
