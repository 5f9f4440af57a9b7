package hostentry

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
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
	spans, err := readOnlySpans("/proc/self/smaps", "/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if err := dropPages(spans); err != nil {
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
	if _, err := readOnlySpans("/proc/self/smaps", "/nonexistent"); err == nil || !strings.Contains(err.Error(), "/nonexistent") {
		t.Errorf("an executable that is not there: %v, want an error naming it", err)
	}
}

// mappedKB is the resident kB of the mapping that starts at addr.
func mappedKB(t *testing.T, addr uintptr) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			lo, _, _ := strings.Cut(fs[0], "-")
			start, _ := strconv.ParseUint(lo, 16, 64)
			in = uintptr(start) == addr
		case in && len(fs) >= 2 && fs[0] == "Rss:":
			kb, _ := strconv.Atoi(fs[1])
			return kb
		}
	}
	t.Fatalf("no mapping at %#x", addr)
	return 0
}

// sink keeps a read the compiler would drop.
var sink byte

// TestNoFaultAround: a read fault in a mapping of a cached file maps the
// 64 KiB around the page (the kernel's default fault-around), and in a
// mapping noFaultAround registered, the page alone.
func TestNoFaultAround(t *testing.T) {
	path := t.TempDir() + "/file"
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Every page in the page cache, as a binary that other hosts run has.
	if m, err := syscall.Mmap(int(f.Fd()), 0, 1<<20, syscall.PROT_READ, syscall.MAP_PRIVATE); err != nil {
		t.Fatal(err)
	} else {
		for i := 0; i < len(m); i += 4096 {
			sink += m[i]
		}
		syscall.Munmap(m)
	}
	touch := func(registered bool) int {
		m, err := syscall.Mmap(int(f.Fd()), 0, 1<<20, syscall.PROT_READ, syscall.MAP_PRIVATE)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Munmap(m)
		start := uintptr(unsafe.Pointer(&m[0]))
		if registered {
			if err := noFaultAround([]span{{start, start + 1<<20}}); err != nil {
				t.Fatal(err)
			}
		}
		sink += m[512<<10]
		return mappedKB(t, start)
	}
	around, alone := touch(false), touch(true)
	t.Logf("one page read: %d kB mapped, %d kB with fault-around stopped", around, alone)
	if around <= 4 {
		t.Skipf("one page read mapped %d kB: this kernel does not fault around, nothing to stop", around)
	}
	if pageKB := os.Getpagesize() >> 10; alone != pageKB {
		t.Errorf("one page read with fault-around stopped mapped %d kB, want %d", alone, pageKB)
	}
}
