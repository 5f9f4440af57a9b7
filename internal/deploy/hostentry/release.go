package hostentry

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseStartPages gives back the pages of the executable's read-only
// mappings (code, read-only data, the function tables) that package init
// and start-up faulted in, a 64 KiB window of the file at a time, and a
// host does not keep using. They stay in the page cache, shared by every
// process that maps them; the host maps again, on its next touch, those
// it uses. `svclab host` links every role of svclab: a host of a split
// synth topology mapped 42-62 MiB of the 123 MB binary after start, and
// keeps about 20 MiB mapped while it serves (docs/PERFORMANCE.md). It
// takes about a millisecond. (The heap's free pages are not worth a
// forced collection: debug.FreeOSMemory gave back less than 0.6 MiB and
// took 10-80 ms.)
func releaseStartPages() error {
	return dropReadOnlyPages("/proc/self/smaps", "/proc/self/exe")
}

// dropReadOnlyPages unmaps the resident pages of exe's private mappings
// that cannot be written and hold no anonymous page (smaps says so
// mapping by mapping), with madvise(MADV_DONTNEED): for such a mapping it
// only drops this process's page table entries. A mapping that can be
// written, or once could (relocations of a position-independent
// executable), is left alone: dropping it would lose what was written.
func dropReadOnlyPages(smaps, exe string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(exe, &st); err != nil {
		return fmt.Errorf("drop start pages: %s: %w", exe, err)
	}
	b, err := os.ReadFile(smaps)
	if err != nil {
		return fmt.Errorf("drop start pages: %w", err)
	}
	type span struct{ start, end uintptr }
	var drop []span
	// last is whether the last span of drop is the mapping being read.
	last := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			// A mapping's header: range perms offset dev inode [path].
			last = false
			ino, err := strconv.ParseUint(f[4], 10, 64)
			if err != nil || ino != st.Ino || f[1][1] == 'w' || f[1][3] != 'p' || devOf(f[3]) != uint64(st.Dev) {
				continue
			}
			lo, hi, ok := strings.Cut(f[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if !ok || err1 != nil || err2 != nil {
				continue
			}
			drop = append(drop, span{uintptr(start), uintptr(end)})
			last = true
		case last && len(f) >= 2 && f[0] == "Anonymous:" && f[1] != "0":
			drop = drop[:len(drop)-1]
			last = false
		}
	}
	for _, s := range drop {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.start, s.end-s.start, syscall.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("drop start pages: madvise %#x-%#x: %w", s.start, s.end, errno)
		}
	}
	return nil
}

// devOf turns smaps' "major:minor" (hex) into the kernel's encoding of
// a device number, as stat reports it.
func devOf(s string) uint64 {
	maj, min, ok := strings.Cut(s, ":")
	if !ok {
		return ^uint64(0)
	}
	a, err1 := strconv.ParseUint(maj, 16, 32)
	b, err2 := strconv.ParseUint(min, 16, 32)
	if err1 != nil || err2 != nil {
		return ^uint64(0)
	}
	// The kernel's new_encode_dev, which stat's st_dev is.
	return (b & 0xff) | (a << 8) | ((b &^ 0xff) << 12)
}
